//! Which of an entry's parameters a kernel may write through: the parameters whose value can
//! reach the address of a store to global (or generic) memory. A plugin's kernel must write only
//! its outputs; a store through an input pointer is a mutation the op never declared.
//!
//! A forward data-flow of pointer provenance over registers, iterated to a fixed point (loops
//! reassign registers): `ld.param` gives its destination the parameters it reads; an instruction
//! that can yield a pointer derived from its sources (moves, `cvta`, additions, selections, ...)
//! gives its destinations the union of what its source registers carry. Results that cannot be a
//! pointer carry nothing: loaded values (data, not the pointer loaded through), comparisons,
//! shifts, products, quotients and remainders, conversions to fewer than 64 bits, a `mad`'s
//! factors (its addend carries), and an `and` with a small mask (`p & 15`, an alignment offset,
//! which kernels compute from input pointers and add to output addresses). Every write
//! instruction (`st`, `atom`, `red`, bulk copies to global memory) adds the parameters its address
//! carries. Over-approximate otherwise: a parameter named here may be written; one not named
//! cannot be, short of addresses computed through memory or from a pointer's scaled value.

use std::collections::{BTreeSet, HashMap};

use super::lex::{mask, Parser, Tok};
use super::parse::parse;
use crate::error::Result;

/// One instruction: opcode and operands, each operand as its words (registers and symbols).
pub(super) struct Inst {
    pub(super) opcode: String,
    pub(super) operands: Vec<Operand>,
}

pub(super) struct Operand {
    pub(super) words: Vec<String>,
    /// Inside `[ ]`: an address.
    address: bool,
    /// An integer constant (`15`, `-16`, `0xFFFFFFF0`).
    literal: Option<i128>,
}

/// Indices (into the entry's parameter list) of the parameters the kernel may store through.
pub fn stored_params(src: &str, entry: &str) -> Result<Vec<usize>> {
    let module = parse(src)?;
    let e = module.entry(entry)?;
    let Some(body) = e.body else { return Ok(Vec::new()) };
    let index: HashMap<&str, usize> = e.params.iter().enumerate().map(|(i, p)| (p.name.as_str(), i)).collect();
    let insts = instructions(body.of(src))?;
    let mut carried: HashMap<String, BTreeSet<usize>> = HashMap::new();
    let mut stored = BTreeSet::new();
    loop {
        let mut changed = false;
        for inst in &insts {
            if let Some(addr) = write_address(inst) {
                for w in &addr.words {
                    stored.extend(carried_by(w, &carried, &index));
                }
                continue;
            }
            let Some((dest, sources)) = inst.operands.split_first() else { continue };
            let from: &[Operand] = if inst.opcode.starts_with("ld.param") {
                sources
            } else if is_load(&inst.opcode) || !may_yield_pointer(inst, sources) {
                &[]
            } else if inst.opcode.starts_with("mad") {
                &sources[sources.len().saturating_sub(1)..] // the addend
            } else {
                sources
            };
            let flow: BTreeSet<usize> =
                from.iter().flat_map(|o| &o.words).flat_map(|w| carried_by(w, &carried, &index)).collect();
            if flow.is_empty() {
                continue;
            }
            for d in &dest.words {
                let into = carried.entry(d.clone()).or_default();
                let before = into.len();
                into.extend(flow.iter().copied());
                changed |= into.len() != before;
            }
        }
        if !changed {
            // An index added to the address is no pointer written through: keep parameters wide
            // enough to hold one (64-bit, or a by-value struct that may contain one).
            let holds_pointer = |k: &usize| e.params[*k].is_64bit_scalar() || e.params[*k].array_len.is_some();
            return Ok(stored.into_iter().filter(holds_pointer).collect());
        }
    }
}

fn carried_by(
    word: &str,
    carried: &HashMap<String, BTreeSet<usize>>,
    params: &HashMap<&str, usize>,
) -> BTreeSet<usize> {
    if let Some(&k) = params.get(word) {
        return BTreeSet::from([k]);
    }
    carried.get(word).cloned().unwrap_or_default()
}

fn is_load(op: &str) -> bool {
    ["ld.", "ldu.", "tex.", "tld4.", "suld.", "shfl.", "atom.", "red.", "cp.", "mbarrier.", "ldmatrix."]
        .iter()
        .any(|p| op.starts_with(p))
        || op == "ld"
}

/// Whether the result can be a pointer derived from a source: not for operations whose result is
/// a flag, a scaled or reduced value, or narrower than a pointer.
fn may_yield_pointer(inst: &Inst, sources: &[Operand]) -> bool {
    let parts: Vec<&str> = inst.opcode.split('.').collect();
    match parts[0] {
        "setp" | "set" | "shr" | "shl" | "mul" | "mul24" | "div" | "rem" | "popc" | "clz" | "bfe" | "bfind"
        | "brev" | "testp" => false,
        // `cvt.u32.u64`: the destination type comes first.
        "cvt" => parts.iter().skip(1).find_map(|p| type_bits(p)).is_none_or(|bits| bits >= 64),
        "and" => !sources.iter().any(|o| o.literal.is_some_and(|v| (0..1 << 32).contains(&v))),
        _ => true,
    }
}

/// An integer literal as PTX writes one (`15`, `0xFFFFFFF0`, `0xFFU`); None for anything else
/// (registers, symbols, `0f3F800000` floats).
fn integer(w: &str) -> Option<i128> {
    let w = w.trim_end_matches(['U', 'u']);
    if let Some(hex) = w.strip_prefix("0x").or_else(|| w.strip_prefix("0X")) {
        i128::from_str_radix(hex, 16).ok()
    } else if w.bytes().all(|c| c.is_ascii_digit()) && !w.is_empty() {
        w.parse().ok()
    } else {
        None
    }
}

/// `u32` -> 32, `f16` -> 16; None for other words.
fn type_bits(part: &str) -> Option<u32> {
    let (kind, bits) = part.split_at(1);
    if matches!(kind, "u" | "s" | "b" | "f") {
        bits.parse().ok()
    } else {
        None
    }
}

/// The address operand of an instruction that writes memory outside the thread's own local,
/// shared and parameter space.
fn write_address(inst: &Inst) -> Option<&Operand> {
    let op = inst.opcode.as_str();
    let parts: Vec<&str> = op.split('.').collect();
    let writes = match parts[0] {
        "st" | "atom" | "red" | "multimem" => !parts.iter().any(|p| matches!(*p, "shared" | "local" | "param")),
        "cp" => {
            // Bulk copies name the destination space first: `cp.async.bulk.global.shared::cta`.
            let bulk = op.starts_with("cp.async.bulk") || op.starts_with("cp.reduce.async.bulk");
            bulk && parts.iter().find(|p| matches!(**p, "global" | "shared" | "shared::cta" | "shared::cluster"))
                == Some(&"global")
        }
        _ => false,
    };
    if !writes {
        return None;
    }
    inst.operands.iter().find(|o| o.address)
}

/// The body's instructions, with predicates, labels, declarations and braces of scopes dropped.
pub(super) fn instructions(body: &str) -> Result<Vec<Inst>> {
    let mut p = Parser { src: body, m: mask(body)?, pos: 0 };
    let mut out = Vec::new();
    let mut stmt: Vec<Tok> = Vec::new();
    while let Some(t) = p.next() {
        match t.punct {
            Some(b';') => {
                if let Some(inst) = instruction(&p, &stmt) {
                    out.push(inst);
                }
                stmt.clear();
            }
            // A scope brace before any opcode; braces inside operands are vectors.
            Some(b'{') | Some(b'}') if stmt.is_empty() => {}
            // The body of a declaration (`.visible .entry k(...) {`, `.func`, an initializer),
            // when the text read is a whole module.
            Some(b'{') if p.text(stmt[0]).starts_with('.') => stmt.clear(),
            // Debug line directives end at the line's end, without `;`.
            None if stmt.is_empty() && matches!(p.text(t), ".loc" | ".file") => p.skip_line(),
            // A label `name:` ends without `;` (`shared::cta` in an opcode is no label).
            Some(b':')
                if stmt.len() == 1 && stmt[0].punct.is_none() && p.peek().is_none_or(|n| n.punct != Some(b':')) =>
            {
                stmt.clear()
            }
            _ => stmt.push(t),
        }
    }
    Ok(out)
}

fn instruction(p: &Parser, toks: &[Tok]) -> Option<Inst> {
    let mut i = 0;
    if toks.first()?.punct == Some(b'@') {
        // `@%p` / `@!%p`
        i = 1;
        if toks.get(i)?.punct == Some(b'!') {
            i += 1;
        }
        i += 1;
    }
    let op = toks.get(i)?;
    if op.punct.is_some() || p.text(*op).starts_with('.') {
        return None; // `.reg`, `.local`, `.pragma`: declarations
    }
    // `shared::cta` splits into words and colons; join the opcode's pieces back.
    let mut opcode = p.text(*op).to_owned();
    i += 1;
    while toks.get(i).is_some_and(|t| t.punct == Some(b':')) && toks.get(i + 1).is_some_and(|t| t.punct == Some(b':')) {
        opcode.push_str("::");
        if let Some(t) = toks.get(i + 2).filter(|t| t.punct.is_none() && t.start == toks[i + 1].end) {
            opcode.push_str(p.text(*t));
            i += 3;
        } else {
            i += 2;
        }
    }
    let mut operands = Vec::new();
    let fresh = || Operand { words: Vec::new(), address: false, literal: None };
    let mut cur = fresh();
    let mut negative = false;
    let mut depth = 0usize;
    for t in &toks[i..] {
        match t.punct {
            Some(b',') if depth == 0 => {
                operands.push(std::mem::replace(&mut cur, fresh()));
                negative = false;
            }
            Some(b'-') if cur.words.is_empty() => negative = true,
            Some(b'[') => {
                cur.address = true;
                depth += 1;
            }
            Some(b'{') => depth += 1,
            Some(b']') | Some(b'}') => depth = depth.saturating_sub(1),
            Some(_) => {}
            None => {
                let w = p.text(*t);
                if cur.words.is_empty() && cur.literal.is_none() && !cur.address {
                    cur.literal = integer(w).map(|v| if negative { -v } else { v });
                }
                if w.starts_with('%')
                    || w.starts_with('_')
                    || w.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '$')
                {
                    cur.words.push(w.to_owned());
                }
            }
        }
    }
    if !cur.words.is_empty() || cur.address {
        operands.push(cur);
    }
    Some(Inst { opcode, operands })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ptx(body: &str) -> String {
        format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(\n .param .u64 k_param_0,\n \
             .param .u64 k_param_1,\n .param .u32 k_param_2,\n .param .u64 k_param_3\n)\n{{\n{body}\n}}\n"
        )
    }

    const LOADS: &str = "ld.param.u64 %rd1, [k_param_0];\nld.param.u64 %rd2, [k_param_1];\n\
        ld.param.u32 %r1, [k_param_2];\nld.param.u64 %rd3, [k_param_3];\ncvta.to.global.u64 %rd4, %rd1;\n\
        mul.wide.s32 %rd5, %r1, 4;\nadd.s64 %rd6, %rd4, %rd5;\nld.global.f32 %f1, [%rd6];\n";

    #[test]
    fn a_store_to_the_output_names_only_the_output() {
        let src = ptx(&format!("{LOADS}add.s64 %rd7, %rd3, %rd5;\nst.global.f32 [%rd7], %f1;\nret;"));
        assert_eq!(stored_params(&src, "k").unwrap(), vec![3]);
    }

    #[test]
    fn a_predicated_store_in_a_scope_through_an_input_is_found() {
        let body = format!("{LOADS}{{ .reg .pred %p1;\nsetp.lt.s32 %p1, %r1, 8;\n@%p1 st.global.v2.b32 [ %rd6 + 0 ], {{ %r1, %r1 }};\n}}\nret;");
        assert_eq!(stored_params(&ptx(&body), "k").unwrap(), vec![0]);
    }

    #[test]
    fn loaded_values_and_comparisons_carry_no_pointer() {
        // The value loaded through input 0 and a comparison of pointer 1 select the output
        // address; neither makes the store a write through inputs 0 or 1.
        let body = format!(
            "{LOADS}setp.eq.s64 %p2, %rd2, 0;\ncvt.rzi.s32.f32 %r2, %f1;\nmul.wide.s32 %rd8, %r2, 4;\n\
             selp.b64 %rd9, %rd8, 0, %p2;\nadd.s64 %rd10, %rd3, %rd9;\nst.global.f32 [%rd10], %f1;\nret;"
        );
        assert_eq!(stored_params(&ptx(&body), "k").unwrap(), vec![3]);
    }

    #[test]
    fn a_pointer_carried_around_a_loop_is_followed() {
        // %rd11 starts as the output and becomes input 1 on the back edge, after the store.
        let body = format!(
            "{LOADS}mov.u64 %rd11, %rd3;\n$L__BB0_1:\nst.global.f32 [%rd11], %f1;\nmov.u64 %rd12, %rd2;\n\
             mov.u64 %rd11, %rd12;\n@%p1 bra $L__BB0_1;\nret;"
        );
        assert_eq!(stored_params(&ptx(&body), "k").unwrap(), vec![1, 3]);
    }

    #[test]
    fn line_directives_end_without_a_semicolon() {
        let body = format!("{LOADS}.loc 1 24 24\nst.global.f32 [%rd6], %f1;\n$L__tmp0:\n.loc 1 25 3\nret;");
        assert_eq!(stored_params(&ptx(&body), "k").unwrap(), vec![0]);
    }

    #[test]
    fn a_bulk_tensor_store_through_a_descriptor_is_found() {
        // TMA: the address is a tensor map; the space pair names the destination first.
        let body = format!(
            "{LOADS}mov.b64 %rd8, k_param_1;\ncvta.param.u64 %rd9, %rd8;\n\
             cp.async.bulk.tensor.1d.shared::cta.global.tile.mbarrier::complete_tx::bytes [%r1], [%rd9, {{%r1}}], [%r1];\n\
             cp.async.bulk.tensor.1d.global.shared::cta.tile.bulk_group [%rd9, {{%r1}}], [%r1];\nret;"
        );
        assert_eq!(stored_params(&ptx(&body), "k").unwrap(), vec![1]);
    }

    #[test]
    fn an_alignment_offset_computed_from_an_input_carries_no_pointer() {
        // As an RMSNorm does: how far x is from 16-byte alignment (x >> 2, x & 15, a truncation)
        // shifts where the output row is written; the store is through the output only.
        let body = format!(
            "{LOADS}shr.s64 %rd8, %rd1, 2;\nneg.s64 %rd9, %rd8;\ncvt.u32.u64 %r2, %rd9;\nand.b64 %rd10, %rd1, 15;\n\
             and.b64 %rd11, %rd1, -16;\nmul.wide.u32 %rd12, %r2, 4;\nadd.s64 %rd13, %rd3, %rd12;\nadd.s64 %rd14, %rd13, %rd10;\n\
             st.global.f32 [%rd14], %f1;\nmad.wide.u32 %rd15, %r2, 4, %rd11;\nst.global.f32 [%rd15], %f1;\nret;"
        );
        // The last store is through x aligned down (and with -16 keeps the pointer): input 0.
        assert_eq!(stored_params(&ptx(&body), "k").unwrap(), vec![0, 3]);
    }

    #[test]
    fn atomics_count_shared_stores_do_not() {
        let body = format!("{LOADS}atom.global.add.f32 %f2, [%rd6], %f1;\nst.shared.f32 [%rd3], %f1;\nret;");
        assert_eq!(stored_params(&ptx(&body), "k").unwrap(), vec![0]);
    }
}
