//! Readable text form of a graph, in the style of torch.fx's `graph.print_tabular`/`str(graph)`.
//! Used by snapshot tests and the CLI; not a serialization format.

use super::ir::{Arg, Graph, Node, Value};
use std::fmt::{self, Write};

impl fmt::Display for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arg::Ref(n) => write!(f, "%{n}"),
            Arg::None => f.write_str("None"),
            Arg::Bool(b) => f.write_str(if *b { "True" } else { "False" }),
            Arg::Int(i) => write!(f, "{i}"),
            Arg::Float(x) => write!(f, "{x:?}"),
            Arg::Str(s) => write!(f, "{s:?}"),
            Arg::List(items) => {
                f.write_str("[")?;
                for (i, a) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{a}")?;
                }
                f.write_str("]")
            }
            Arg::Dtype(d) => write!(f, "torch.{d}"),
            Arg::Device(d) => write!(f, "device({d:?})"),
            Arg::Layout(l) | Arg::MemoryFormat(l) => write!(f, "torch.{l}"),
            Arg::Slice(p) => write!(f, "slice({}, {}, {})", p[0], p[1], p[2]),
            Arg::Opaque(r) => write!(f, "<{r}>"),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::None => f.write_str("None"),
            Value::Tensor(t) => write!(f, "{t}"),
            Value::Tuple(items) => {
                f.write_str("(")?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str(")")
            }
            Value::SymInt(e) => write!(f, "Sym({e})"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x:?}"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Opaque(r) => write!(f, "<{r}>"),
        }
    }
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{} : {} = {}[{}](", self.name, self.val, self.op.as_str(), self.target)?;
        let mut first = true;
        for a in &self.args {
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            write!(f, "{a}")?;
        }
        for (k, a) in &self.kwargs {
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            write!(f, "{k}={a}")?;
        }
        f.write_str(")")?;
        if !self.regions.is_empty() {
            write!(f, "  # region {}", self.regions.join("+"))?;
        }
        Ok(())
    }
}

impl fmt::Display for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        for n in &self.nodes {
            writeln!(s, "{n}")?;
        }
        f.write_str(&s)
    }
}
