//! The boundary of a region: what it reads from outside and what outside reads from it.

use super::pattern::PortOrder;
use super::{Boundary, DerivedSize, Port, PortKind, Region};
use crate::graph::{Dag, Graph, Value};

/// `inside(i)` tells membership. Inputs: activations (user inputs and computed values) in order
/// of first use, then weights (parameters, buffers, constants) in order of first use, so that a
/// decomposition reading a weight first (`linear` -> `permute(w)`, `addmm`) keeps the order.
/// Outputs in node order (`pin_outputs` puts them in the order the user chose). A pattern's
/// signature (`order`) fixes both instead. Fails (with the reason) when a boundary
/// value is neither a tensor nor an integer.
pub fn compute(
    g: &Graph,
    dag: &Dag,
    region: &Region,
    order: Option<&PortOrder>,
    inside: &dyn Fn(usize) -> bool,
) -> Result<Boundary, String> {
    let mut inputs: Vec<Port> = Vec::new();
    let mut input_pos: Vec<usize> = Vec::new();
    for &m in &region.members {
        for &p in &dag.inputs[m] {
            if inside(p) || input_pos.contains(&p) {
                continue;
            }
            let producer = &g.nodes[p];
            let kind = match &producer.val {
                Value::Tensor(t) => PortKind::tensor(t),
                Value::SymInt(e) => PortKind::SymInt { expr: e.clone() },
                Value::Int(i) => PortKind::SymInt { expr: i.to_string() },
                other => {
                    return Err(format!(
                        "it reads `{}`, which is {} rather than a tensor or an integer{}",
                        producer.name,
                        describe(other),
                        if matches!(other, Value::Tuple(_)) {
                            "; put the tuple's getitem nodes in the region too"
                        } else {
                            ""
                        }
                    ))
                }
            };
            input_pos.push(p);
            inputs.push(Port { name: producer.name.clone(), kind, mutated: false });
        }
    }
    let mut by_kind: Vec<usize> = (0..inputs.len()).collect();
    by_kind.sort_by_key(|&k| g.nodes[input_pos[k]].is_weight());
    let mut slots: Vec<Option<Port>> = inputs.into_iter().map(Some).collect();
    let mut inputs: Vec<Port> = by_kind.iter().map(|&k| slots[k].take().expect("a permutation")).collect();
    let mut outputs = Vec::new();
    for &m in &region.members {
        if dag.users[m].iter().all(|&u| inside(u)) {
            continue;
        }
        let node = &g.nodes[m];
        match &node.val {
            Value::Tensor(t) => {
                outputs.push(Port { name: node.name.clone(), kind: PortKind::tensor(t), mutated: false })
            }
            other => {
                let reader =
                    dag.users[m].iter().find(|&&u| !inside(u)).map(|&u| g.nodes[u].name.as_str()).unwrap_or("?");
                return Err(format!(
                    "`{}` is read outside the region (by `{reader}`) but is {}; a plugin can only return tensors",
                    node.name,
                    describe(other)
                ));
            }
        }
    }
    if outputs.is_empty() {
        return Err("nothing it computes is used outside it, so there is nothing to outline".into());
    }
    // Mark inputs written in place by a member (allowed only when the impl declares mutation).
    for &m in &region.members {
        let node = &g.nodes[m];
        for pos in &node.mutates {
            let arg = match pos.parse::<usize>() {
                Ok(i) => node.args.get(i),
                Err(_) => node.kwargs.get(pos),
            };
            if let Some(crate::graph::Arg::Ref(r)) = arg {
                if let Some(port) = inputs.iter_mut().find(|p| &p.name == r) {
                    port.mutated = true;
                }
            }
        }
    }
    let mut readers: Vec<usize> =
        region.members.iter().flat_map(|&m| dag.users[m].iter().copied()).filter(|&u| !inside(u)).collect();
    readers.sort_unstable();
    readers.dedup();
    if let Some(order) = order {
        permute(g, &mut inputs, &order.inputs);
        permute(g, &mut outputs, &order.outputs);
    }
    let derived = derive_sizes(&mut inputs);
    // One boundary per region lives until the report: no spare capacity (a pushed-to Vec
    // holds room for four ports, most boundaries have one or two).
    inputs.shrink_to_fit();
    outputs.shrink_to_fit();
    readers.shrink_to_fit();
    Ok(Boundary { inputs, outputs, readers, derived })
}

/// Put ports in the order of the node positions `want` (a pattern's inputs or outputs). Ports
/// the pattern does not name (sizes the target computed outside the occurrence) follow, in
/// first-use order.
fn permute(g: &Graph, ports: &mut Vec<Port>, want: &[usize]) {
    let mut rest: Vec<Option<Port>> = std::mem::take(ports).into_iter().map(Some).collect();
    for &w in want {
        let name = g.nodes[w].name.as_str();
        if let Some(p) = rest.iter_mut().find(|p| p.as_ref().is_some_and(|p| p.name == name)) {
            ports.push(p.take().expect("found above"));
        }
    }
    ports.extend(rest.into_iter().flatten());
}

/// Take out the integer inputs that equal a dim of a tensor input (a `sym_size` that export
/// computed outside the region): the plugin reads them from that input's shape.
fn derive_sizes(inputs: &mut Vec<Port>) -> Vec<DerivedSize> {
    let mut derived = Vec::new();
    let dim_of = |e: &str, inputs: &[Port]| {
        inputs.iter().find_map(|p| match &p.kind {
            PortKind::Tensor { shape, .. } => {
                shape.iter().position(|d| d.to_string() == e).map(|dim| (p.name.clone(), dim))
            }
            PortKind::SymInt { .. } => None,
        })
    };
    let mut k = 0;
    while k < inputs.len() {
        let found = match &inputs[k].kind {
            // A constant is not a size the shape carries symbolically.
            PortKind::SymInt { expr } if expr.parse::<i64>().is_err() => dim_of(expr, inputs),
            _ => None,
        };
        match found {
            Some((input, dim)) => derived.push(DerivedSize { name: inputs.remove(k).name, input, dim }),
            None => k += 1,
        }
    }
    derived
}

/// Put the inputs in the order the user fixed (node names); both lists must name the same values.
pub fn pin_inputs(b: &mut Boundary, order: &[String]) -> Result<(), String> {
    let listed = |name: &str| order.iter().position(|o| o == name);
    if let Some(p) = b.inputs.iter().find(|p| listed(&p.name).is_none()) {
        return Err(format!(
            "it reads `{}`, which lower_as(inputs=...) does not list; list every value the region reads",
            p.name
        ));
    }
    if let Some((k, name)) = order.iter().enumerate().find(|(_, o)| !b.inputs.iter().any(|p| &p.name == *o)) {
        return Err(format!("lower_as(inputs=...) lists `{name}` (position {k}), which the region does not read"));
    }
    if order.len() != b.inputs.len() {
        return Err("lower_as(inputs=...) lists a value twice".into());
    }
    b.inputs.sort_by_key(|p| listed(&p.name));
    Ok(())
}

/// Put the outputs in the order the user fixed (node names). `exact` (`lower_as(outputs=...)`):
/// the list must name every output, each once, and nothing else. Otherwise (the tensors a
/// decorated function returned) the outputs it names come first in its order, the others
/// follow in node order, and names that are no output are passed over. `computed` tells a
/// region member's name (for saying why a listed value is no output).
pub fn pin_outputs(
    b: &mut Boundary,
    order: &[String],
    exact: bool,
    computed: &dyn Fn(&str) -> bool,
) -> Result<(), String> {
    let listed = |name: &str| order.iter().position(|o| o == name);
    if exact {
        if let Some(p) = b.outputs.iter().find(|p| listed(&p.name).is_none()) {
            return Err(format!(
                "`{}` is used after the region, but lower_as(outputs=...) does not list it; list every value \
                 the region computes that is used after it",
                p.name
            ));
        }
        for (k, name) in order.iter().enumerate() {
            if order[..k].contains(name) {
                return Err(format!(
                    "lower_as(outputs=...) lists `{name}` twice (positions {} and {k})",
                    listed(name).unwrap_or(0)
                ));
            }
            if !b.outputs.iter().any(|p| &p.name == name) {
                let why = if computed(name) {
                    "which the region computes but nothing after it uses, so it is no output"
                } else {
                    "which the region does not compute (it is an input, or a value from outside the region)"
                };
                return Err(format!("lower_as(outputs=...) lists `{name}` (position {k}), {why}"));
            }
        }
    }
    // Unlisted outputs keep their node order after the listed ones (a stable sort).
    b.outputs.sort_by_key(|p| listed(&p.name).unwrap_or(usize::MAX));
    Ok(())
}

fn describe(v: &Value) -> &'static str {
    match v {
        Value::None => "None (no value)",
        Value::Tuple(_) => "a tuple",
        Value::Float(_) => "a float",
        Value::Bool(_) => "a bool",
        Value::Opaque(_) => "an opaque Python object",
        Value::Tensor(_) => "a tensor",
        Value::SymInt(_) | Value::Int(_) => "an integer",
    }
}
