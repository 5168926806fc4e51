//! The fx graph read straight into the IR: what `tta.rewrite` hands the pass, without writing
//! and parsing JSON for every node. The Python serializer (`tta/graph.py`) still writes the
//! same graph as text for reports, the CLI and `check="full"`; a test holds the two equal.
//!
//! Rust walks the nodes and their arguments. What a Python object means (a target's name and
//! schema, a value, a module stack, a stack trace, an unusual literal, a node's region tags)
//! comes from the serializer's own helpers, asked once per distinct object: an exported graph
//! shares targets, values, stacks and traces across thousands of nodes. Like the serializer,
//! the reader remembers each node's `args`, `kwargs` and value by identity (fx replaces them
//! when it rewires a node), so the check after the edits re-reads only the nodes that changed.

use super::guard::{guarded, to_py};
use crate::error::{Error, ErrorKind};
use crate::graph::{Arg, ModuleRef, Node, OpKind, Value};
use indexmap::IndexMap;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};

/// A cache keyed by object identity. An entry holds its object, so the id cannot be reused by
/// another object while the entry lives.
struct ByIdentity<T>(HashMap<usize, (Py<PyAny>, T), Fast>);

/// Object addresses hash well with a fast hasher; SipHash's DoS resistance buys nothing here.
type Fast = foldhash::fast::RandomState;

impl<T: Clone> ByIdentity<T> {
    fn new() -> Self {
        ByIdentity(HashMap::default())
    }

    fn get_or(&mut self, obj: &Bound<'_, PyAny>, make: impl FnOnce(&Bound<'_, PyAny>) -> PyResult<T>) -> PyResult<T> {
        let key = obj.as_ptr() as usize;
        if let Some((_, v)) = self.0.get(&key) {
            return Ok(v.clone());
        }
        let v = make(obj)?;
        self.0.insert(key, (obj.clone().unbind(), v.clone()));
        Ok(v)
    }
}

/// The last distinct object asked about and its value, for objects each node has its own copy
/// of (export copies the module stack and the stack trace into every node) but that mostly
/// equal the previous node's: one comparison in C instead of a call into Python.
struct Recent<T>(Option<(Py<PyAny>, T)>);

/// Equal, and for dicts in the same order too (a module stack lists the outermost module first;
/// dict equality alone ignores order).
fn same(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<bool> {
    if a.is(b) {
        return Ok(true);
    }
    let (Ok(a), Ok(b)) = (a.cast::<PyDict>(), b.cast::<PyDict>()) else { return a.eq(b) };
    if a.len() != b.len() {
        return Ok(false);
    }
    for ((ka, va), (kb, vb)) in a.iter().zip(b.iter()) {
        if !(ka.eq(&kb)? && va.eq(&vb)?) {
            return Ok(false);
        }
    }
    Ok(true)
}

impl<T: Clone> Recent<T> {
    fn get_or(&mut self, obj: &Bound<'_, PyAny>, make: impl FnOnce(&Bound<'_, PyAny>) -> PyResult<T>) -> PyResult<T> {
        if let Some((last, v)) = &self.0 {
            if same(last.bind(obj.py()), obj)? {
                return Ok(v.clone());
            }
        }
        let v = make(obj)?;
        self.0 = Some((obj.clone().unbind(), v.clone()));
        Ok(v)
    }
}

/// What makes two tensor values the same in the graph format (`graph.value_text`'s cache key):
/// the dtype (a singleton, by address), whether the layout is strided, sizes and strides.
#[derive(PartialEq, Eq, Hash)]
struct TensorKey {
    dtype: usize,
    strided: bool,
    shape: Vec<i64>,
    stride: Vec<i64>,
}

/// The items of a sequence when every one is a plain int (not a SymInt).
fn ints(seq: &Bound<'_, PyAny>) -> PyResult<Option<Vec<i64>>> {
    let mut out = Vec::new();
    for x in seq.try_iter()? {
        let x = x?;
        if !x.is_exact_instance_of::<PyInt>() {
            return Ok(None);
        }
        match x.extract::<i64>() {
            Ok(i) => out.push(i),
            Err(_) => return Ok(None),
        }
    }
    Ok(Some(out))
}

#[derive(Clone)]
struct TargetFacts {
    name: String,
    mutates: Vec<String>,
    aliases: bool,
}

#[derive(Clone)]
struct Stack {
    module: Option<ModuleRef>,
    entries: Vec<ModuleRef>,
}

/// The objects a node was read from; a node whose objects are all still the same is unchanged.
struct Seen {
    /// Held so that the node's address, the map's key, stays its own.
    _node: Py<PyAny>,
    args: Py<PyAny>,
    kwargs: Py<PyAny>,
    val: Option<Py<PyAny>>,
}

struct Reader {
    /// The serializer whose helpers say what objects mean (`Serializer.target_facts`, ...).
    facts: Py<PyAny>,
    node_type: Py<PyAny>,
    weights: HashSet<String>,
    targets: ByIdentity<TargetFacts>,
    values: ByIdentity<Value>,
    tensors: HashMap<TensorKey, Value, Fast>,
    tensor_type: Py<PyAny>,
    strided: Py<PyAny>,
    literals: ByIdentity<Arg>,
    stacks: Recent<Stack>,
    /// By the JSON text `module_stack_json` returns: one text object per distinct stack, so a
    /// stack unlike the previous node's is parsed once.
    stack_texts: ByIdentity<Vec<ModuleRef>>,
    sources: Recent<Option<String>>,
    seen: HashMap<usize, Seen, Fast>,
    /// Read and not yet handed to the pass.
    nodes: Option<Vec<Node>>,
    read_ms: f64,
}

fn bad_graph(message: String) -> PyErr {
    to_py(Error::new(ErrorKind::Input, message))
}

fn parse_json<T: serde::de::DeserializeOwned>(what: &str, text: &str) -> PyResult<T> {
    serde_json::from_str(text).map_err(|e| bad_graph(format!("{what}: {e} in {text:?}")))
}

/// `text` (a JSON str from a helper) parsed, once per text object.
fn parsed<T: Clone + serde::de::DeserializeOwned>(cache: &mut ByIdentity<T>, what: &str, text: &Bound<'_, PyAny>) -> PyResult<T> {
    cache.get_or(text, |t| parse_json(what, t.cast::<PyString>()?.to_str()?))
}

fn op_kind(op: &str) -> PyResult<OpKind> {
    Ok(match op {
        "placeholder" => OpKind::Placeholder,
        "call_function" => OpKind::CallFunction,
        "call_method" => OpKind::CallMethod,
        "call_module" => OpKind::CallModule,
        "get_attr" => OpKind::GetAttr,
        "output" => OpKind::Output,
        other => return Err(bad_graph(format!("an fx node has the unknown op {other:?}"))),
    })
}

impl Reader {
    fn node(&mut self, n: &Bound<'_, PyAny>) -> PyResult<Node> {
        let py = n.py();
        let facts = self.facts.bind(py).clone();
        let name: String = n.getattr(intern!(py, "name"))?.extract()?;
        let op = op_kind(n.getattr(intern!(py, "op"))?.cast::<PyString>()?.to_str()?)?;
        let target_obj = n.getattr(intern!(py, "target"))?;
        let target = match op {
            OpKind::Placeholder => TargetFacts { name: target_obj.extract()?, mutates: Vec::new(), aliases: false },
            OpKind::Output => TargetFacts { name: "output".to_owned(), mutates: Vec::new(), aliases: false },
            _ => {
                self.targets.get_or(&target_obj, |t| {
                    let (name, mutates, aliases) = facts.call_method1(intern!(py, "target_facts"), (t,))?.extract()?;
                    Ok(TargetFacts { name, mutates, aliases })
                })?
            }
        };
        // `_args` and `_kwargs` are what the `args` and `kwargs` properties return, without a Python call.
        let args_obj = n.getattr(intern!(py, "_args"))?;
        let args = self.list(&args_obj)?;
        let kwargs_obj = n.getattr(intern!(py, "_kwargs"))?;
        let mut kwargs = IndexMap::new();
        for (k, v) in kwargs_obj.cast::<PyDict>()?.iter() {
            kwargs.insert(k.extract::<String>()?, self.arg(&v)?);
        }
        let meta = n.getattr(intern!(py, "meta"))?;
        let meta = meta.cast::<PyDict>()?;
        let val_obj = meta.get_item(intern!(py, "val"))?.filter(|v| !v.is_none());
        let val = match &val_obj {
            Some(v) => self.value(v)?,
            None => Value::None,
        };
        let regions = match meta.get_item(intern!(py, "custom"))? {
            Some(custom) if custom.is_truthy()? => facts.call_method1(intern!(py, "region_tags"), (custom,))?.extract()?,
            _ => Vec::new(),
        };
        let stack = match meta.get_item(intern!(py, "nn_module_stack"))? {
            Some(s) if s.is_truthy()? => {
                let texts = &mut self.stack_texts;
                self.stacks.get_or(&s, |s| {
                    let entries: Vec<ModuleRef> = parsed(texts, "a module stack", &facts.call_method1(intern!(py, "module_stack_json"), (s,))?)?;
                    Ok(Stack { module: entries.last().cloned(), entries })
                })?
            }
            _ => Stack { module: None, entries: Vec::new() },
        };
        let source = match meta.get_item(intern!(py, "stack_trace"))? {
            Some(t) if t.is_truthy()? => self.sources.get_or(&t, |t| facts.call_method1(intern!(py, "source_of"), (t,))?.extract())?,
            _ => None,
        };
        let weight = op == OpKind::Placeholder && self.weights.contains(&name);
        self.seen.insert(
            n.as_ptr() as usize,
            Seen { _node: n.clone().unbind(), args: args_obj.unbind(), kwargs: kwargs_obj.unbind(), val: val_obj.map(Bound::unbind) },
        );
        Ok(Node {
            name,
            op,
            target: target.name,
            args,
            kwargs,
            val,
            regions,
            module: stack.module,
            module_stack: stack.entries,
            source,
            mutates: target.mutates,
            aliases: target.aliases,
            weight,
        })
    }

    /// A node's value: by identity, else (a tensor of static shape) by what `graph.value_text`
    /// keys its text on, else as that helper writes it.
    fn value(&mut self, v: &Bound<'_, PyAny>) -> PyResult<Value> {
        let key = v.as_ptr() as usize;
        if let Some((_, value)) = self.values.0.get(&key) {
            return Ok(value.clone());
        }
        let tensor = self.tensor_key(v)?;
        let value = match tensor.as_ref().and_then(|k| self.tensors.get(k)) {
            Some(value) => value.clone(),
            None => {
                let text = self.facts.bind(v.py()).call_method1(intern!(v.py(), "value_json"), (v,))?;
                let value: Value = parse_json("the value of an fx node", text.cast::<PyString>()?.to_str()?)?;
                if let Some(k) = tensor {
                    self.tensors.insert(k, value.clone());
                }
                value
            }
        };
        self.values.0.insert(key, (v.clone().unbind(), value.clone()));
        Ok(value)
    }

    /// Dtype, layout, sizes and strides of a tensor whose sizes and strides are all ints.
    fn tensor_key(&self, v: &Bound<'_, PyAny>) -> PyResult<Option<TensorKey>> {
        let py = v.py();
        if !v.is_instance(self.tensor_type.bind(py))? {
            return Ok(None);
        }
        let dtype = v.getattr(intern!(py, "dtype"))?.as_ptr() as usize;
        let strided = v.getattr(intern!(py, "layout"))?.is(self.strided.bind(py));
        let Some(shape) = ints(&v.getattr(intern!(py, "shape"))?)? else { return Ok(None) };
        let stride = if strided {
            match ints(&v.call_method0(intern!(py, "stride"))?)? {
                Some(s) => s,
                None => return Ok(None),
            }
        } else {
            Vec::new()
        };
        Ok(Some(TensorKey { dtype, strided, shape, stride }))
    }

    fn list(&mut self, items: &Bound<'_, PyAny>) -> PyResult<Vec<Arg>> {
        items.try_iter()?.map(|a| self.arg(&a?)).collect()
    }

    /// An argument, as `graph.encode_arg` encodes it.
    fn arg(&mut self, a: &Bound<'_, PyAny>) -> PyResult<Arg> {
        let py = a.py();
        if a.is_instance(self.node_type.bind(py))? {
            return Ok(Arg::Ref(a.getattr(intern!(py, "name"))?.extract()?));
        }
        if a.is_none() {
            return Ok(Arg::None);
        }
        if let Ok(b) = a.cast::<PyBool>() {
            return Ok(Arg::Bool(b.is_true()));
        }
        if a.is_instance_of::<PyInt>() {
            // An int past i64 is written as JSON text and read back as a float, as before.
            if let Ok(i) = a.extract::<i64>() {
                return Ok(Arg::Int(i));
            }
        } else if let Ok(f) = a.cast::<PyFloat>() {
            return Ok(Arg::Float(f.value()));
        } else if let Ok(s) = a.cast::<PyString>() {
            return Ok(Arg::Str(s.to_str()?.to_owned()));
        } else if a.is_instance_of::<PyTuple>() || a.is_instance_of::<PyList>() {
            return self.list(a).map(Arg::List);
        }
        let facts = self.facts.bind(py).clone();
        self.literals.get_or(a, |a| {
            parse_json("an fx node argument", facts.call_method1(intern!(py, "literal_json"), (a,))?.extract()?)
        })
    }

    /// Whether `n` is a node read before, with the same arguments and value.
    fn unchanged(&self, n: &Bound<'_, PyAny>) -> PyResult<bool> {
        let py = n.py();
        let Some(s) = self.seen.get(&(n.as_ptr() as usize)) else { return Ok(false) };
        let val = n.getattr(intern!(py, "meta"))?.cast::<PyDict>()?.get_item(intern!(py, "val"))?.filter(|v| !v.is_none());
        Ok(s.args.bind(py).is(&n.getattr(intern!(py, "_args"))?)
            && s.kwargs.bind(py).is(&n.getattr(intern!(py, "_kwargs"))?)
            && match (&s.val, &val) {
                (None, None) => true,
                (Some(a), Some(b)) => a.bind(py).is(b),
                _ => false,
            })
    }
}

/// Reads fx graphs for the pass (`read`), then the nodes that changed after the edits
/// (`Outcome.check_fx`). Python creates one per rewrite, around the rewrite's serializer.
#[pyclass(name = "FxReader", module = "tta._core", frozen)]
pub struct PyFxReader(Mutex<Reader>);

impl PyFxReader {
    fn lock(&self, py: Python<'_>) -> MutexGuard<'_, Reader> {
        // Reading calls Python, which may switch threads: waiting for the lock detaches from
        // the interpreter, so another thread holding it can finish. A poisoned lock only means
        // a panic was caught while it was held; every cache entry is inserted whole.
        self.0.lock_py_attached(py).unwrap_or_else(|p| p.into_inner())
    }

    /// The nodes `read` produced, and how long reading them took; taken once.
    pub fn take_nodes(&self, py: Python<'_>) -> PyResult<(Vec<Node>, f64)> {
        let mut r = self.lock(py);
        let nodes = r.nodes.take().ok_or_else(|| bad_graph("this FxReader holds no nodes: call read(graph.nodes) first".into()))?;
        Ok((nodes, r.read_ms))
    }

    /// Each fx node's name, in order, and the nodes that are new or changed since `read`, read again.
    pub fn delta(&self, nodes: &Bound<'_, PyAny>) -> PyResult<(Vec<String>, HashMap<String, Node>)> {
        let py = nodes.py();
        let mut r = self.lock(py);
        let mut order = Vec::new();
        let mut changed = HashMap::new();
        for n in nodes.try_iter()? {
            let n = n?;
            if r.unchanged(&n)? {
                order.push(n.getattr(intern!(py, "name"))?.extract()?);
            } else {
                let node = r.node(&n)?;
                order.push(node.name.clone());
                changed.insert(node.name.clone(), node);
            }
        }
        Ok((order, changed))
    }
}

#[pymethods]
impl PyFxReader {
    /// `facts`: the serializer (`tta.graph.Serializer`); `node_type`, `tensor_type`, `strided`:
    /// `torch.fx.Node`, `torch.Tensor`, `torch.strided`; `weights`: placeholders holding
    /// parameters, buffers or constants.
    #[new]
    fn new(facts: Py<PyAny>, node_type: Py<PyAny>, tensor_type: Py<PyAny>, strided: Py<PyAny>, weights: Vec<String>) -> Self {
        PyFxReader(Mutex::new(Reader {
            facts,
            node_type,
            weights: weights.into_iter().collect(),
            targets: ByIdentity::new(),
            values: ByIdentity::new(),
            tensors: HashMap::default(),
            tensor_type,
            strided,
            literals: ByIdentity::new(),
            stacks: Recent(None),
            stack_texts: ByIdentity::new(),
            sources: Recent(None),
            seen: HashMap::default(),
            nodes: None,
            read_ms: 0.0,
        }))
    }

    /// Read `nodes` (an fx graph's nodes, in order) for the next `analyze(..., reader=self)`.
    fn read(&self, nodes: &Bound<'_, PyAny>) -> PyResult<()> {
        guarded("FxReader.read", "", || {
            let t = std::time::Instant::now();
            let mut r = self.lock(nodes.py());
            let n = nodes.len().unwrap_or(0);
            r.seen.reserve(n);
            let mut read = Vec::with_capacity(n);
            for node in nodes.try_iter()? {
                read.push(r.node(&node?)?);
            }
            r.nodes = Some(read);
            r.read_ms = t.elapsed().as_secs_f64() * 1e3;
            Ok(())
        })
    }

    /// The nodes `read` produced, as graph JSON's `"nodes"` list (for tests and debugging).
    fn nodes_json(&self, py: Python<'_>) -> PyResult<String> {
        guarded("FxReader.nodes_json", "", || Ok(super::guard::json(&self.lock(py).nodes)))
    }
}
