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
use crate::graph::{Arg, Dim, ModuleRef, Node, Nodes, OpKind, TensorMeta, Value};
use indexmap::IndexMap;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use std::collections::{HashMap, HashSet};
use std::sync::{LazyLock, Mutex, MutexGuard};

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

/// The last few distinct objects asked about and their values, for objects each node has its
/// own copy of (export copies the module stack, the stack trace and the region tags into every
/// node) but that mostly equal one of the last nodes' (a loop body alternates between a few
/// modules): a comparison in C instead of a call into Python.
struct Recent<T>(Vec<(Py<PyAny>, T)>);

/// How many distinct objects `Recent` remembers.
const RECENT: usize = 4;

/// Equal, and for dicts in the same order too (a module stack lists the outermost module first;
/// dict equality alone ignores order). Values that fail to compare (a user's tensor in
/// `meta["custom"]`) are not the same.
fn same(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> bool {
    if a.is(b) {
        return true;
    }
    let (Ok(a), Ok(b)) = (a.cast::<PyDict>(), b.cast::<PyDict>()) else {
        return a.eq(b).unwrap_or(false);
    };
    a.len() == b.len()
        && a.iter().zip(b.iter()).all(|((ka, va), (kb, vb))| ka.eq(&kb).unwrap_or(false) && va.eq(&vb).unwrap_or(false))
}

impl<T: Clone> Recent<T> {
    fn new() -> Self {
        Recent(Vec::with_capacity(RECENT))
    }

    fn get_or(&mut self, obj: &Bound<'_, PyAny>, make: impl FnOnce(&Bound<'_, PyAny>) -> PyResult<T>) -> PyResult<T> {
        for i in 0..self.0.len() {
            if same(self.0[i].0.bind(obj.py()), obj) {
                let v = self.0[i].1.clone();
                // Most recent first: a run of equal objects costs one comparison each.
                self.0[..=i].rotate_right(1);
                return Ok(v);
            }
        }
        let v = make(obj)?;
        if self.0.len() == RECENT {
            self.0.pop();
        }
        self.0.insert(0, (obj.clone().unbind(), v.clone()));
        Ok(v)
    }
}

/// What makes two tensor values the same in the graph format (`graph.value_text`'s cache key,
/// with symbolic sizes by their text): the dtype (a singleton, by address), whether the layout
/// is strided, sizes and strides.
#[derive(PartialEq, Eq, Hash)]
struct TensorKey {
    dtype: usize,
    strided: bool,
    shape: Vec<Dim>,
    stride: Vec<Dim>,
}

/// A call target's facts by identity, for the whole process: they never change (the
/// serializer's own cache of them is process-wide too), and every export of a model calls the
/// same few dozen ops. Entries hold their target, so an id is never reused. The lock is never
/// held across a call into Python.
static TARGETS: LazyLock<Mutex<TargetMap>> = LazyLock::new(Default::default);

type TargetMap = HashMap<usize, (Py<PyAny>, TargetFacts), Fast>;

fn target_facts(facts: &Bound<'_, PyAny>, target: &Bound<'_, PyAny>) -> PyResult<TargetFacts> {
    let key = target.as_ptr() as usize;
    let known = |m: &TargetMap| m.get(&key).map(|(_, f)| f.clone());
    if let Some(f) = known(&TARGETS.lock().unwrap_or_else(|p| p.into_inner())) {
        return Ok(f);
    }
    let py = target.py();
    let (name, mutates, aliases) = facts.call_method1(intern!(py, "target_facts"), (target,))?.extract()?;
    let f = TargetFacts { name, mutates, aliases };
    TARGETS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(key)
        .or_insert_with(|| (target.clone().unbind(), f.clone()));
    Ok(f)
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

/// The torch objects the reader tests values against.
struct Types {
    node: Py<PyAny>,
    tensor: Py<PyAny>,
    sym_int: Py<PyAny>,
    strided: Py<PyAny>,
}

struct Reader {
    /// The serializer whose helpers say what objects mean (`Serializer.target_facts`, ...).
    facts: Py<PyAny>,
    weights: HashSet<String>,
    values: ByIdentity<Value>,
    tensors: HashMap<TensorKey, Value, Fast>,
    /// dtype -> its name in the graph format.
    dtypes: ByIdentity<String>,
    /// A SymInt's symbolic node -> the dimension it writes.
    syms: ByIdentity<Option<Dim>>,
    types: Types,
    literals: ByIdentity<Arg>,
    stacks: Recent<Stack>,
    /// By the JSON text `module_stack_json` returns: one text object per distinct stack, so a
    /// stack unlike the previous node's is parsed once.
    stack_texts: ByIdentity<Vec<ModuleRef>>,
    sources: Recent<Option<String>>,
    /// A node's region ids by its `meta["custom"]`.
    tags: Recent<Vec<String>>,
    seen: HashMap<usize, Seen, Fast>,
    /// Read and not yet handed to the pass.
    nodes: Option<Nodes>,
    read_ms: f64,
}

fn bad_graph(message: String) -> PyErr {
    to_py(Error::new(ErrorKind::Input, message))
}

fn parse_json<T: serde::de::DeserializeOwned>(what: &str, text: &str) -> PyResult<T> {
    serde_json::from_str(text).map_err(|e| bad_graph(format!("{what}: {e} in {text:?}")))
}

/// `text` (a JSON str from a helper) parsed, once per text object.
fn parsed<T: Clone + serde::de::DeserializeOwned>(
    cache: &mut ByIdentity<T>,
    what: &str,
    text: &Bound<'_, PyAny>,
) -> PyResult<T> {
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
            _ => target_facts(&facts, &target_obj)?,
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
            // Equal tags were declared when first seen (`region_tags` declares a region once).
            Some(custom) if custom.is_truthy()? => {
                self.tags.get_or(&custom, |c| facts.call_method1(intern!(py, "region_tags"), (c,))?.extract())?
            }
            _ => Vec::new(),
        };
        let stack = match meta.get_item(intern!(py, "nn_module_stack"))? {
            Some(s) if s.is_truthy()? => {
                let texts = &mut self.stack_texts;
                self.stacks.get_or(&s, |s| {
                    let entries: Vec<ModuleRef> =
                        parsed(texts, "a module stack", &facts.call_method1(intern!(py, "module_stack_json"), (s,))?)?;
                    Ok(Stack { module: entries.last().cloned(), entries })
                })?
            }
            _ => Stack { module: None, entries: Vec::new() },
        };
        let source = match meta.get_item(intern!(py, "stack_trace"))? {
            Some(t) if t.is_truthy()? => {
                self.sources.get_or(&t, |t| facts.call_method1(intern!(py, "source_of"), (t,))?.extract())?
            }
            _ => None,
        };
        let weight = op == OpKind::Placeholder && self.weights.contains(&name);
        self.seen.insert(
            n.as_ptr() as usize,
            Seen {
                _node: n.clone().unbind(),
                args: args_obj.unbind(),
                kwargs: kwargs_obj.unbind(),
                val: val_obj.map(Bound::unbind),
            },
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
            parsed_from: Default::default(),
        })
    }

    /// A node's value: by identity, else as `graph.encode_value` writes it. Tensors, SymInts
    /// and tuples of them are written here (a tensor by its `TensorKey`, once per key); any
    /// other value by that helper.
    fn value(&mut self, v: &Bound<'_, PyAny>) -> PyResult<Value> {
        let key = v.as_ptr() as usize;
        if let Some((_, value)) = self.values.0.get(&key) {
            return Ok(value.clone());
        }
        let value = match self.own_value(v)? {
            Some(value) => value,
            None => {
                let text = self.facts.bind(v.py()).call_method1(intern!(v.py(), "value_json"), (v,))?;
                parse_json("the value of an fx node", text.cast::<PyString>()?.to_str()?)?
            }
        };
        self.values.0.insert(key, (v.clone().unbind(), value.clone()));
        Ok(value)
    }

    /// The value of a tensor, SymInt or tuple or list of those; None for anything else.
    fn own_value(&mut self, v: &Bound<'_, PyAny>) -> PyResult<Option<Value>> {
        let py = v.py();
        if v.is_instance(self.types.tensor.bind(py))? {
            let dtype = v.getattr(intern!(py, "dtype"))?;
            let Some(k) = self.tensor_key(v, &dtype)? else { return Ok(None) };
            if let Some(value) = self.tensors.get(&k) {
                return Ok(Some(value.clone()));
            }
            let value = self.tensor(&dtype, &k)?;
            self.tensors.insert(k, value.clone());
            return Ok(Some(value));
        }
        if v.is_instance(self.types.sym_int.bind(py))? {
            return Ok(self.sym_dim(v)?.map(|d| match d {
                Dim::Const(i) => Value::Int(i),
                Dim::Sym(e) => Value::SymInt(e),
            }));
        }
        if v.is_exact_instance_of::<PyTuple>() || v.is_exact_instance_of::<PyList>() {
            let mut items = Vec::new();
            for x in v.try_iter()? {
                match self.own_value(&x?)? {
                    Some(item) => items.push(item),
                    None => return Ok(None),
                }
            }
            return Ok(Some(Value::Tuple(items)));
        }
        Ok(None)
    }

    /// A tensor as `graph.encode_value` writes it: the dtype's name (`graph.dtype_text`, asked
    /// once per dtype), the sizes, and the strides if strided.
    fn tensor(&mut self, dtype: &Bound<'_, PyAny>, k: &TensorKey) -> PyResult<Value> {
        let py = dtype.py();
        let facts = self.facts.bind(py);
        let dtype = self.dtypes.get_or(dtype, |d| facts.call_method1(intern!(py, "dtype_text"), (d,))?.extract())?;
        Ok(Value::Tensor(TensorMeta { dtype, shape: k.shape.clone(), stride: k.strided.then(|| k.stride.clone()) }))
    }

    /// Dtype, layout, sizes and strides of a tensor whose sizes and strides are ints or SymInts.
    fn tensor_key(&mut self, v: &Bound<'_, PyAny>, dtype: &Bound<'_, PyAny>) -> PyResult<Option<TensorKey>> {
        let py = v.py();
        let dtype = dtype.as_ptr() as usize;
        let strided = v.getattr(intern!(py, "layout"))?.is(self.types.strided.bind(py));
        let Some(shape) = self.dims(&v.getattr(intern!(py, "shape"))?)? else {
            return Ok(None);
        };
        let stride = if strided {
            match self.dims(&v.call_method0(intern!(py, "stride"))?)? {
                Some(s) => s,
                None => return Ok(None),
            }
        } else {
            Vec::new()
        };
        Ok(Some(TensorKey { dtype, strided, shape, stride }))
    }

    /// The items of a sequence of ints and SymInts as dimensions; None if another item is there.
    fn dims(&mut self, seq: &Bound<'_, PyAny>) -> PyResult<Option<Vec<Dim>>> {
        let mut out = Vec::new();
        for x in seq.try_iter()? {
            let x = x?;
            let d = if x.is_exact_instance_of::<PyInt>() {
                x.extract::<i64>().ok().map(Dim::Const)
            } else if x.is_instance(self.types.sym_int.bind(x.py()))? {
                self.sym_dim(&x)?
            } else {
                None
            };
            match d {
                Some(d) => out.push(d),
                None => return Ok(None),
            }
        }
        Ok(Some(out))
    }

    /// A SymInt as `graph.dim_text` writes it, asked once per symbolic node (`SymInt.node`: the
    /// sizes of one symbol share it). A constant past i64 gives None.
    fn sym_dim(&mut self, x: &Bound<'_, PyAny>) -> PyResult<Option<Dim>> {
        let py = x.py();
        let facts = self.facts.bind(py);
        self.syms.get_or(&x.getattr(intern!(py, "node"))?, |_| {
            let d = facts.call_method1(intern!(py, "dim_text"), (x,))?;
            Ok(if let Ok(s) = d.cast::<PyString>() {
                Some(Dim::Sym(s.to_str()?.to_owned()))
            } else {
                d.extract::<i64>().ok().map(Dim::Const)
            })
        })
    }

    fn list(&mut self, items: &Bound<'_, PyAny>) -> PyResult<Vec<Arg>> {
        items.try_iter()?.map(|a| self.arg(&a?)).collect()
    }

    /// An argument, as `graph.encode_arg` encodes it.
    fn arg(&mut self, a: &Bound<'_, PyAny>) -> PyResult<Arg> {
        let py = a.py();
        if a.is_instance(self.types.node.bind(py))? {
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
        let Some(s) = self.seen.get(&(n.as_ptr() as usize)) else {
            return Ok(false);
        };
        let val =
            n.getattr(intern!(py, "meta"))?.cast::<PyDict>()?.get_item(intern!(py, "val"))?.filter(|v| !v.is_none());
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
    pub fn take_nodes(&self, py: Python<'_>) -> PyResult<(Nodes, f64)> {
        let mut r = self.lock(py);
        let nodes = r
            .nodes
            .take()
            .ok_or_else(|| bad_graph("this FxReader holds no nodes: call read(graph.nodes) first".into()))?;
        Ok((nodes, r.read_ms))
    }

    /// Each fx node's name, in order, and the nodes that are new or changed since `read`, read
    /// again; the nodes in `skip` (about to be erased) are left out.
    pub fn delta(
        &self,
        nodes: &Bound<'_, PyAny>,
        skip: &[Bound<'_, PyAny>],
    ) -> PyResult<(Vec<String>, HashMap<String, Node>)> {
        let py = nodes.py();
        let skip: HashSet<usize, Fast> = skip.iter().map(|n| n.as_ptr() as usize).collect();
        let mut r = self.lock(py);
        let mut order = Vec::new();
        let mut changed = HashMap::new();
        for n in nodes.try_iter()? {
            let n = n?;
            if skip.contains(&(n.as_ptr() as usize)) {
                continue;
            }
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
    /// `facts`: the serializer (`tta.graph.Serializer`); `node_type`, `tensor_type`,
    /// `sym_int_type`, `strided`: `torch.fx.Node`, `torch.Tensor`, `torch.SymInt`,
    /// `torch.strided`; `weights`: placeholders holding parameters, buffers or constants.
    #[new]
    fn new(
        facts: Py<PyAny>,
        node_type: Py<PyAny>,
        tensor_type: Py<PyAny>,
        sym_int_type: Py<PyAny>,
        strided: Py<PyAny>,
        weights: Vec<String>,
    ) -> Self {
        PyFxReader(Mutex::new(Reader {
            facts,
            weights: weights.into_iter().collect(),
            values: ByIdentity::new(),
            tensors: HashMap::default(),
            dtypes: ByIdentity::new(),
            syms: ByIdentity::new(),
            types: Types { node: node_type, tensor: tensor_type, sym_int: sym_int_type, strided },
            literals: ByIdentity::new(),
            stacks: Recent::new(),
            stack_texts: ByIdentity::new(),
            sources: Recent::new(),
            tags: Recent::new(),
            seen: HashMap::default(),
            nodes: None,
            read_ms: 0.0,
        }))
    }

    /// Read `nodes` (an fx graph's nodes, in order) for the next `analyze(..., reader=self)`;
    /// `by_name`, when given, is filled with the nodes by name.
    #[pyo3(signature = (nodes, by_name=None))]
    fn read(&self, nodes: &Bound<'_, PyAny>, by_name: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
        guarded("FxReader.read", "", || {
            let t = std::time::Instant::now();
            let mut r = self.lock(nodes.py());
            let n = nodes.len().unwrap_or(0);
            r.seen.reserve(n);
            let mut read = Vec::with_capacity(n);
            for node in nodes.try_iter()? {
                let node = node?;
                let parsed = r.node(&node)?;
                if let Some(by_name) = by_name {
                    by_name.set_item(&parsed.name, &node)?;
                }
                read.push(Box::new(parsed));
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
