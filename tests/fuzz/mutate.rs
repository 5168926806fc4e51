//! The generator and the mutations: byte-level (flip, insert, delete, duplicate, splice, dictionary
//! tokens, interesting integers) and structure-aware for JSON (replace, delete or duplicate a
//! value deep in the document, swap node references, retag regions).

use serde_json::Value;

/// xorshift64*: small, fast, and the same sequence for the same seed on every machine.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    pub fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

pub const INTERESTING: &[i64] = &[
    0,
    1,
    -1,
    2,
    7,
    8,
    16,
    64,
    255,
    256,
    65535,
    1 << 31,
    -(1 << 31),
    i64::MAX,
    i64::MIN,
    i64::MAX - 1,
    i64::MIN + 1,
    u32::MAX as i64,
];

/// Byte mutations, `n` of them stacked; `dict` holds tokens of the input language.
pub fn bytes(input: &[u8], other: &[u8], dict: &[&str], rng: &mut Rng) -> Vec<u8> {
    let mut b = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(b.len() + 1);
        match rng.below(9) {
            0 if !b.is_empty() => {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
            1 if !b.is_empty() => {
                let i = rng.below(b.len());
                b[i] = rng.next() as u8;
            }
            2 => b.insert(at, rng.next() as u8),
            3 if !b.is_empty() => {
                let len = 1 + rng.below(16.min(b.len()));
                let from = rng.below(b.len() - len + 1);
                b.drain(from..from + len);
            }
            4 if !b.is_empty() => {
                let len = 1 + rng.below(64.min(b.len()));
                let from = rng.below(b.len() - len + 1);
                let chunk = b[from..from + len].to_vec();
                b.splice(at..at, chunk);
            }
            5 if !other.is_empty() => {
                // Splice: our head, their tail.
                let cut = rng.below(other.len());
                b.truncate(at);
                b.extend_from_slice(&other[cut..]);
            }
            6 | 7 if !dict.is_empty() => {
                let tok = rng.pick(dict).as_bytes().to_vec();
                b.splice(at..at, tok);
            }
            _ => {
                let v = rng.pick(INTERESTING).to_string().into_bytes();
                b.splice(at..at, v);
            }
        }
    }
    b
}

/// A random value of the document, by a random walk from the root (each level stops with
/// probability 1/4), so one mutation costs the depth, not the size, of the document.
fn random_path(v: &Value, rng: &mut Rng) -> Vec<PathStep> {
    let mut path = Vec::new();
    let mut cur = v;
    loop {
        if rng.chance(4) && !path.is_empty() {
            return path;
        }
        match cur {
            Value::Array(xs) if !xs.is_empty() => {
                let i = rng.below(xs.len());
                path.push(PathStep::Index(i));
                cur = &xs[i];
            }
            Value::Object(m) if !m.is_empty() => {
                let (k, x) = m.iter().nth(rng.below(m.len())).expect("in range");
                path.push(PathStep::Key(k.clone()));
                cur = x;
            }
            _ => return path,
        }
    }
}

#[derive(Clone)]
enum PathStep {
    Key(String),
    Index(usize),
}

fn get<'a>(v: &'a Value, path: &[PathStep]) -> Option<&'a Value> {
    let mut cur = v;
    for s in path {
        cur = match (s, cur) {
            (PathStep::Key(k), Value::Object(m)) => m.get(k)?,
            (PathStep::Index(i), Value::Array(xs)) => xs.get(*i)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn at<'a>(v: &'a mut Value, path: &[PathStep]) -> Option<&'a mut Value> {
    let mut cur = v;
    for s in path {
        cur = match (s, cur) {
            (PathStep::Key(k), Value::Object(m)) => m.get_mut(k)?,
            (PathStep::Index(i), Value::Array(xs)) => xs.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// Replace, delete or duplicate one value of a JSON document; `strings` are candidate string
/// values (node names, shape expressions, dtypes...).
pub fn json(doc: &Value, other: &Value, strings: &[&str], rng: &mut Rng) -> Value {
    let mut doc = doc.clone();
    for _ in 0..1 + rng.below(3) {
        let path = random_path(&doc, rng);
        let donor = get(other, &random_path(other, rng)).cloned().unwrap_or(Value::Null);
        let (parent, last) = match path.split_last() {
            Some((last, parent)) => (parent.to_vec(), Some(last.clone())),
            None => (Vec::new(), None),
        };
        let Some(slot) = at(&mut doc, &path) else { continue };
        match rng.below(8) {
            0 => *slot = Value::from(*rng.pick(INTERESTING)),
            1 => *slot = Value::from(*rng.pick(strings)),
            2 => *slot = donor,
            3 => *slot = serde_json::json!({"float": *rng.pick(&["nan", "inf", "-inf"])}),
            4 => *slot = serde_json::json!({"ref": *rng.pick(strings)}),
            5 => {
                if let Value::Array(xs) = slot {
                    if !xs.is_empty() {
                        let i = rng.below(xs.len());
                        let j = rng.below(xs.len());
                        xs.swap(i, j);
                    }
                }
            }
            _ => {
                // Delete or duplicate in the parent container.
                let dup = rng.chance(2);
                if let (Some(parent), Some(last)) = (at(&mut doc, &parent), last) {
                    match (parent, last) {
                        (Value::Array(xs), PathStep::Index(i)) if i < xs.len() => {
                            if dup {
                                let x = xs[i].clone();
                                xs.insert(i, x);
                            } else {
                                xs.remove(i);
                            }
                        }
                        (Value::Object(m), PathStep::Key(k)) if !dup => {
                            m.remove(&k);
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    doc
}

/// Every string in a document, for use as replacement values.
pub fn strings_of(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(xs) => xs.iter().for_each(|x| strings_of(x, out)),
        Value::Object(m) => m.iter().for_each(|(k, x)| {
            out.push(k.clone());
            strings_of(x, out)
        }),
        _ => {}
    }
}
