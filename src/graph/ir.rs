//! The graph IR: one flat list of nodes in execution (topological) order, as torch.fx keeps it.
//!
//! The JSON form of these types is the contract with `python/tta/graph.py` and is documented in
//! `docs/graph-format.md`. `Arg`, `Value` and `Dim` have hand-written serde impls (`codec.rs`)
//! because their JSON is untagged for the common cases and untagged serde derive is slow on
//! 100k-node graphs.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// The format tag and the schema version this crate reads and writes.
pub const FORMAT: &str = "tta-graph";
pub const VERSION: u32 = 1;

/// A graph's nodes, boxed: passes move and reorder nodes (a node is a few hundred bytes), and a
/// 100k-node graph's list is then a few hundred kilobytes to move instead of tens of megabytes.
#[allow(clippy::vec_box)]
pub type Nodes = Vec<Box<Node>>;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Graph {
    pub format: String,
    pub version: u32,
    pub nodes: Nodes,
    /// Region instances declared by annotations (`lower_as`): id -> declaration.
    /// Selector-made regions (module type, pattern) are added by the pass, not carried here.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub regions: IndexMap<String, RegionDecl>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RegionDecl {
    /// Key of the plugin descriptor in the Python registry.
    #[serde(rename = "impl")]
    pub impl_key: String,
    /// `file:line` of the `with tta.lower_as(...)` statement when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The region's inputs in the order the user fixed (`lower_as(..., inputs=...)`), by node
    /// name; absent, the boundary's default order applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<Vec<String>>,
    /// The region's outputs in the order the user fixed (`lower_as(..., outputs=...)`), by node
    /// name: every value read outside the region, each once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outputs: Option<Vec<String>>,
    /// The tensors a `@lower_as` function returned, in return order, by node name: the region's
    /// outputs among them come first in this order, any other output after them in node order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub returns: Option<Vec<String>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    Placeholder,
    CallFunction,
    CallMethod,
    CallModule,
    GetAttr,
    Output,
}

impl OpKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OpKind::Placeholder => "placeholder",
            OpKind::CallFunction => "call_function",
            OpKind::CallMethod => "call_method",
            OpKind::CallModule => "call_module",
            OpKind::GetAttr => "get_attr",
            OpKind::Output => "output",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Node {
    pub name: String,
    pub op: OpKind,
    /// Qualified target: `aten.add.Tensor`, `_operator.getitem`, a method or attribute name.
    pub target: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<Arg>,
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub kwargs: IndexMap<String, Arg>,
    /// `node.meta["val"]`: what the node produces.
    #[serde(default, skip_serializing_if = "Value::is_none")]
    pub val: Value,
    /// Region instance ids this node is tagged with (more than one means overlap or nesting).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub regions: Vec<String>,
    /// Innermost entry of `nn_module_stack`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<ModuleRef>,
    /// All entries of `nn_module_stack`, outermost first (used by the module-type selector).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub module_stack: Vec<ModuleRef>,
    /// First user stack frame, `file:line`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Positions (in `args`, then kwargs by name) of arguments this op writes, from its schema.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mutates: Vec<String>,
    /// The op's output aliases (is a view of) one of its inputs, from its schema.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub aliases: bool,
    /// A placeholder holding a parameter, buffer or constant rather than a user input.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub weight: bool,
    /// Which node text this node was parsed from (`super::from_parts`), while it is as parsed.
    #[serde(skip)]
    pub parsed_from: ParsedFrom,
}

/// The position of a node's text among those `from_parts` parsed, so that a node the pass did
/// not change is written back as its text (`super::to_json_reusing`) instead of serialized
/// again. Not part of the node's value: nodes compare equal whatever they were parsed from.
#[derive(Clone, Copy, Debug, Default)]
pub struct ParsedFrom(pub Option<u32>);

impl PartialEq for ParsedFrom {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Node {
    /// Holds a parameter, buffer or constant: a lifted placeholder or a `get_attr`.
    pub fn is_weight(&self) -> bool {
        self.weight || self.op == OpKind::GetAttr
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ModuleRef {
    pub path: String,
    #[serde(rename = "type")]
    pub type_name: String,
    /// Which call of the module at `path` this is: 0 for the first, N where torch.export
    /// suffixes the `nn_module_stack` key with `@N` (a module called again, e.g. in a loop).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub call: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// An argument of a node: a reference to another node or a literal. Equality compares floats
/// by value except that NaN equals NaN (`same_float`): a graph is equal to itself.
#[derive(Clone, Debug)]
pub enum Arg {
    Ref(String),
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Arg>),
    Dtype(String),
    Device(String),
    Layout(String),
    MemoryFormat(String),
    Slice(Box<[Arg; 3]>),
    /// Anything else, kept as its Python repr; it never matches a pattern literal.
    Opaque(String),
}

/// What a node produces (`meta["val"]`). Equality as for `Arg`.
#[derive(Clone, Debug, Default)]
pub enum Value {
    #[default]
    None,
    Tensor(TensorMeta),
    Tuple(Vec<Value>),
    /// A symbolic integer, as an expression over shape symbols.
    SymInt(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Opaque(String),
}

/// Float equality for graph comparison: bit-identical, or both NaN (JSON carries one NaN,
/// `{"float": "nan"}`, so payloads are not part of a graph). `0.0` and `-0.0` differ, as they
/// do in the JSON.
pub fn same_float(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

impl PartialEq for Arg {
    fn eq(&self, other: &Self) -> bool {
        use Arg::*;
        match (self, other) {
            (Ref(a), Ref(b)) | (Str(a), Str(b)) | (Dtype(a), Dtype(b)) | (Device(a), Device(b)) => a == b,
            (Layout(a), Layout(b)) | (MemoryFormat(a), MemoryFormat(b)) | (Opaque(a), Opaque(b)) => a == b,
            (None, None) => true,
            (Bool(a), Bool(b)) => a == b,
            (Int(a), Int(b)) => a == b,
            (Float(a), Float(b)) => same_float(*a, *b),
            (List(a), List(b)) => a == b,
            (Slice(a), Slice(b)) => a == b,
            _ => false,
        }
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        use Value::*;
        match (self, other) {
            (None, None) => true,
            (Tensor(a), Tensor(b)) => a == b,
            (Tuple(a), Tuple(b)) => a == b,
            (SymInt(a), SymInt(b)) | (Opaque(a), Opaque(b)) => a == b,
            (Int(a), Int(b)) => a == b,
            (Float(a), Float(b)) => same_float(*a, *b),
            (Bool(a), Bool(b)) => a == b,
            _ => false,
        }
    }
}

impl Value {
    pub fn is_none(&self) -> bool {
        matches!(self, Value::None)
    }
    pub fn as_tensor(&self) -> Option<&TensorMeta> {
        match self {
            Value::Tensor(t) => Some(t),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorMeta {
    pub dtype: String,
    pub shape: Vec<Dim>,
    /// Strides when known (absent for some fake tensors).
    pub stride: Option<Vec<Dim>>,
}

/// One dimension: a constant or a symbolic expression such as `s0` or `2*s0 + 1`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    Const(i64),
    Sym(String),
}

impl std::fmt::Display for Dim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dim::Const(c) => write!(f, "{c}"),
            Dim::Sym(s) => f.write_str(s),
        }
    }
}

impl std::fmt::Display for TensorMeta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}[", self.dtype)?;
        for (i, d) in self.shape.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")
    }
}

impl Arg {
    /// Visit every node reference in this argument, depth first, in order.
    pub fn for_each_ref<'a>(&'a self, f: &mut impl FnMut(&'a str)) {
        match self {
            Arg::Ref(name) => f(name),
            Arg::List(items) => items.iter().for_each(|a| a.for_each_ref(f)),
            Arg::Slice(parts) => parts.iter().for_each(|a| a.for_each_ref(f)),
            _ => {}
        }
    }

    /// Rewrite every node reference in place.
    pub fn map_refs(&mut self, f: &mut impl FnMut(&str) -> Option<String>) {
        match self {
            Arg::Ref(name) => {
                if let Some(new) = f(name) {
                    *name = new;
                }
            }
            Arg::List(items) => items.iter_mut().for_each(|a| a.map_refs(f)),
            Arg::Slice(parts) => parts.iter_mut().for_each(|a| a.map_refs(f)),
            _ => {}
        }
    }
}

impl Node {
    /// Every node this node reads, args first, then kwargs, in order (duplicates kept).
    pub fn refs(&self) -> impl Iterator<Item = &str> {
        let mut out = Vec::new();
        for a in self.args.iter().chain(self.kwargs.values()) {
            a.for_each_ref(&mut |r| out.push(r));
        }
        out.into_iter()
    }

    pub fn map_refs(&mut self, f: &mut impl FnMut(&str) -> Option<String>) {
        for a in self.args.iter_mut().chain(self.kwargs.values_mut()) {
            a.map_refs(f);
        }
    }
}

impl Graph {
    pub fn new(nodes: Vec<Node>) -> Self {
        Graph {
            format: FORMAT.into(),
            version: VERSION,
            nodes: nodes.into_iter().map(Box::new).collect(),
            regions: IndexMap::new(),
        }
    }
}
