//! All the PTX changes one kernel needs for TensorRT's AOT QDP launch, in one call. TensorRT
//! calls `kernel(input pointers..., int32 extras..., output pointers...)` and nothing else: no
//! scratch, no hidden arguments, and a misordered launch does not fail, it computes garbage. So
//! this drops Triton's scratch parameters, reorders the rest, checks every slot against what
//! TensorRT puts there, and checks the ISA against the target driver. The launch's layout rules
//! live here once: which parameter goes where (`qdp_order`), how many of each kind
//! (`QdpSlots::of`), and the byte layout a CUBIN must record (`check_cubin_slots`).

use super::elf::cubin_params;
use super::isa::{self, IsaVersion};
use super::parse::Entry;
use super::rewrite::{drop_trailing_scratch, permute_params, reparse};
use super::span::ptx_err;
use crate::error::Result;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct QdpSpec {
    /// The `.entry` to adapt (Triton: `compiled.metadata.name`).
    pub entry: String,
    /// Byte sizes of the trailing scratch parameters to drop, in declaration order; for Triton
    /// `[global_scratch_size, profile_scratch_size]` from `compiled.metadata`. Empty for
    /// cuTile and CuTeDSL.
    #[serde(default)]
    pub trailing_scratch: Vec<u64>,
    /// After dropping scratch, each parameter's role in the launch, in declaration order: the
    /// order and the slots follow from them (`qdp_order`, `QdpSlots::of`). Given instead of
    /// `order` and `slots`.
    #[serde(default)]
    pub roles: Option<Vec<ParamRole>>,
    /// After dropping scratch: new parameter `i` is old parameter `order[i]`. `None` keeps the
    /// declared order.
    #[serde(default)]
    pub order: Option<Vec<usize>>,
    /// What TensorRT will pass; when given, every parameter is checked against its slot.
    #[serde(default)]
    pub slots: Option<QdpSlots>,
    /// The newest PTX ISA the target driver accepts (`max_isa_for_driver`); checked, never
    /// relabelled.
    #[serde(default)]
    pub max_version: Option<IsaVersion>,
}

/// The arguments of TensorRT's launch: `inputs` device pointers, `extras` int32 values
/// (`SymInt32` extra args), `outputs` device pointers, in that order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct QdpSlots {
    pub inputs: usize,
    pub extras: usize,
    pub outputs: usize,
}

/// What TensorRT passes in a parameter slot; declared in launch order, so sorting by role puts
/// parameters in the QDP order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Input,
    Extra,
    Output,
}

/// A kernel parameter as the launch function passes it: its role, and which input, extra or
/// output it is.
pub type ParamRole = (Role, usize);

/// The permutation that puts parameters with these roles into the QDP order (inputs, extras,
/// outputs, each by index): new parameter `i` is old parameter `order[i]`.
pub fn qdp_order(roles: &[ParamRole]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..roles.len()).collect();
    order.sort_by_key(|&i| roles[i]);
    order
}

impl QdpSlots {
    /// How many parameters of each kind these roles fill.
    pub fn of(roles: &[ParamRole]) -> QdpSlots {
        let count = |role: Role| roles.iter().filter(|(r, _)| *r == role).count();
        QdpSlots { inputs: count(Role::Input), extras: count(Role::Extra), outputs: count(Role::Output) }
    }

    /// Byte sizes TensorRT's arguments take: 8-byte pointers around 4-byte int32 extras.
    pub fn byte_sizes(self) -> Vec<usize> {
        [(self.inputs, 8), (self.extras, 4), (self.outputs, 8)]
            .into_iter()
            .flat_map(|(n, size)| vec![size; n])
            .collect()
    }
}

/// TensorRT passes one pointer for every input and output: a kernel whose parameters have these
/// roles must take each of the `inputs` inputs and `outputs` outputs exactly once.
pub fn check_roles(roles: &[ParamRole], inputs: usize, outputs: usize) -> Result<()> {
    let ports =
        || [(Role::Input, inputs), (Role::Output, outputs)].into_iter().flat_map(|(r, n)| (0..n).map(move |k| (r, k)));
    let times = |port: ParamRole| roles.iter().filter(|&&r| r == port).count();
    let name = |(role, k): ParamRole| format!("{} {k}", if role == Role::Input { "input" } else { "output" });
    if let Some((port, n)) = ports().map(|p| (p, times(p))).find(|&(_, n)| n > 1) {
        let times = if n == 2 { "twice".to_owned() } else { format!("{n} times") };
        return Err(ptx_err(format!("{} is passed {times}; TensorRT passes each buffer once", name(port))));
    }
    if let Some(port) = ports().find(|&p| times(p) == 0) {
        return Err(ptx_err(format!(
            "{} is not passed to the kernel; TensorRT passes a pointer for every input and output, so the kernel must take each of them once",
            name(port)
        )));
    }
    Ok(())
}

/// The order and slots a spec asks for, from its roles or as given.
fn layout(spec: &QdpSpec) -> Result<(Option<Vec<usize>>, Option<QdpSlots>)> {
    match &spec.roles {
        None => Ok((spec.order.clone(), spec.slots)),
        Some(_) if spec.order.is_some() || spec.slots.is_some() => {
            Err(ptx_err("a QDP spec gives the parameters' roles, or their order and slots, not both".to_owned()))
        }
        Some(roles) => Ok((Some(qdp_order(roles)), Some(QdpSlots::of(roles)))),
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct QdpPtx {
    pub ptx: String,
    /// The entry as it reads in `ptx` (its `reqntid` is the block size to launch with).
    pub entry: Entry,
}

pub fn to_qdp_abi(ptx: &str, spec: &QdpSpec) -> Result<QdpPtx> {
    let (order, slots) = layout(spec)?;
    let mut out = drop_trailing_scratch(ptx, &spec.entry, &spec.trailing_scratch)?;
    if let Some(order) = &order {
        out = permute_params(&out, &spec.entry, order)?;
    }
    let m = reparse(&out)?;
    let entry = m.entry(&spec.entry)?.clone();
    if let Some(slots) = slots {
        check_slots(&entry, slots)?;
    }
    if let Some(max) = spec.max_version {
        isa::check_version(m.version, max)?;
    }
    Ok(QdpPtx { ptx: out, entry })
}

/// Refuse an entry whose parameters do not line up with TensorRT's arguments: the count, and
/// each parameter's kind (a 64-bit pointer or a 32-bit integer) in its position.
pub fn check_slots(e: &Entry, s: QdpSlots) -> Result<()> {
    let total = s.inputs + s.extras + s.outputs;
    let layout = format!("{} input pointer(s), {} int32 extra(s), {} output pointer(s)", s.inputs, s.extras, s.outputs);
    if e.params.len() != total {
        let names: Vec<String> = e.params.iter().map(|p| format!("`{}` {}", p.name, p.describe())).collect();
        return Err(ptx_err(format!(
            "entry `{}` declares {} parameter(s) ({}) but TensorRT passes {total}: {layout}",
            e.name,
            e.params.len(),
            names.join(", ")
        )));
    }
    for (k, p) in e.params.iter().enumerate() {
        let (slot, fits, wants) = if k < s.inputs {
            (format!("input {k}"), p.is_64bit_scalar(), "a 64-bit device pointer")
        } else if k < s.inputs + s.extras {
            (format!("int32 extra {}", k - s.inputs), p.is_32bit_int(), "a 32-bit integer")
        } else {
            (format!("output {}", k - s.inputs - s.extras), p.is_64bit_scalar(), "a 64-bit device pointer")
        };
        if p.hidden || !fits {
            let hint = if p.array_len.is_some() && !p.hidden {
                " (a by-value struct such as a cute.Tensor; take a cute.Pointer and build the tensor in the kernel)"
            } else {
                ""
            };
            return Err(ptx_err(format!(
                "entry `{}`: parameter {k} `{}` is {}{hint}, but TensorRT passes {wants} there ({slot}; the launch is {layout})",
                e.name,
                p.name,
                p.describe()
            )));
        }
    }
    Ok(())
}

/// The parameter layout ptxas recorded in a CUBIN must be TensorRT's (`QdpSlots::byte_sizes`).
pub fn check_cubin_slots(cubin: &[u8], entry: &str, slots: QdpSlots) -> Result<()> {
    let mut params = cubin_params(cubin, entry)
        .map_err(|e| ptx_err(format!("cannot read the kernel's parameters from the CUBIN: {}", e.message)))?;
    params.sort_by_key(|p| p.ordinal);
    let sizes: Vec<usize> = params.iter().map(|p| usize::from(p.size)).collect();
    let want = slots.byte_sizes();
    if sizes != want {
        return Err(ptx_err(format!("the CUBIN lays out parameters of sizes {sizes:?}, but TensorRT passes {want:?}")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = ".version 9.4\n.target sm_90a\n.visible .entry rs(\n\
        .param .u64 .ptr .global .align 1 rs_param_0,\n.param .u64 .ptr .global .align 1 rs_param_1,\n\
        .param .u32 rs_param_2,\n.param .u64 .ptr .global .align 1 rs_param_3,\n.param .u64 .ptr .global .align 1 rs_param_4\n)\n\
        .reqntid 128\n{\nld.param.b64 %rd1, [rs_param_0];\nld.param.b64 %rd2, [rs_param_1];\nld.param.b32 %r1, [rs_param_2];\nret;\n}\n";

    fn spec() -> QdpSpec {
        QdpSpec {
            entry: "rs".into(),
            trailing_scratch: vec![0, 0],
            roles: None,
            order: Some(vec![1, 2, 0]),
            slots: Some(QdpSlots { inputs: 1, extras: 1, outputs: 1 }),
            max_version: None,
        }
    }

    #[test]
    fn drops_permutes_and_checks() {
        let q = to_qdp_abi(SRC, &spec()).unwrap();
        let names: Vec<&str> = q.entry.params.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["rs_param_1", "rs_param_2", "rs_param_0"]);
        assert_eq!(q.entry.reqntid, Some(vec![128]));
        assert!(q.ptx.ends_with("{\nld.param.b64 %rd1, [rs_param_0];\nld.param.b64 %rd2, [rs_param_1];\nld.param.b32 %r1, [rs_param_2];\nret;\n}\n"));
    }

    #[test]
    fn roles_give_the_order_and_the_slots() {
        let roles = [(Role::Output, 0), (Role::Input, 1), (Role::Extra, 0), (Role::Input, 0)];
        assert_eq!(qdp_order(&roles), [3, 1, 2, 0]);
        assert_eq!(QdpSlots::of(&roles), QdpSlots { inputs: 2, extras: 1, outputs: 1 });
        assert_eq!(QdpSlots::of(&roles).byte_sizes(), [8, 8, 4, 8]);
        let by_roles = QdpSpec {
            roles: Some(vec![(Role::Output, 0), (Role::Input, 0), (Role::Extra, 0)]),
            order: None,
            slots: None,
            ..spec()
        };
        assert_eq!(to_qdp_abi(SRC, &by_roles).unwrap(), to_qdp_abi(SRC, &spec()).unwrap());
        let both = QdpSpec { roles: by_roles.roles.clone(), ..spec() };
        assert!(to_qdp_abi(SRC, &both).unwrap_err().message.contains("not both"));
    }

    #[test]
    fn each_input_and_output_is_taken_once() {
        let roles = [(Role::Input, 0), (Role::Extra, 0), (Role::Output, 0)];
        assert!(check_roles(&roles, 1, 1).is_ok());
        let e = check_roles(&[(Role::Input, 0), (Role::Input, 0), (Role::Output, 0)], 1, 1).unwrap_err();
        assert_eq!(e.message, "input 0 is passed twice; TensorRT passes each buffer once");
        let e = check_roles(&[(Role::Output, 0); 3], 1, 1).unwrap_err();
        assert_eq!(e.message, "output 0 is passed 3 times; TensorRT passes each buffer once");
        let e = check_roles(&roles, 2, 1).unwrap_err();
        assert!(e.message.starts_with("input 1 is not passed to the kernel; "), "{}", e.message);
    }

    #[test]
    fn wrong_slots_are_refused() {
        let e = to_qdp_abi(SRC, &QdpSpec { order: None, ..spec() }).unwrap_err();
        assert_eq!(
            e.message,
            "entry `rs`: parameter 1 `rs_param_1` is .u64 .ptr, but TensorRT passes a 32-bit integer there \
             (int32 extra 0; the launch is 1 input pointer(s), 1 int32 extra(s), 1 output pointer(s))"
        );
        let e = to_qdp_abi(SRC, &QdpSpec { trailing_scratch: vec![], order: None, ..spec() }).unwrap_err();
        assert!(e.message.starts_with("entry `rs` declares 5 parameter(s) (`rs_param_0` .u64 .ptr, "), "{}", e.message);
        let strukt = ".version 8.8\n.entry c(.param .align 8 .b8 c_param_0[16], .param .u32 c_param_1, .param .u64 c_param_2) { ret; }";
        let e = to_qdp_abi(strukt, &QdpSpec { entry: "c".into(), trailing_scratch: vec![], order: None, ..spec() })
            .unwrap_err();
        assert!(e.message.contains("`c_param_0` is .b8[16] (a by-value struct such as a cute.Tensor"), "{}", e.message);
    }

    #[test]
    fn version_is_checked_last_and_not_relabelled() {
        let e = to_qdp_abi(SRC, &QdpSpec { max_version: Some(IsaVersion::new(9, 0)), ..spec() }).unwrap_err();
        assert!(e.message.starts_with("PTX ISA 9.4 needs a CUDA 13.4 driver"));
        let q = to_qdp_abi(SRC, &QdpSpec { max_version: Some(IsaVersion::new(9, 4)), ..spec() }).unwrap();
        assert!(q.ptx.starts_with(".version 9.4\n"));
    }

    #[test]
    fn spec_from_json() {
        let s: QdpSpec = serde_json::from_str(
            r#"{"entry": "rs", "trailing_scratch": [0, 0], "order": [1, 2, 0],
                "slots": {"inputs": 1, "extras": 1, "outputs": 1}, "max_version": "9.0"}"#,
        )
        .unwrap();
        assert_eq!(s, QdpSpec { max_version: Some(IsaVersion::new(9, 0)), ..spec() });
        let minimal: QdpSpec = serde_json::from_str(r#"{"entry": "rs"}"#).unwrap();
        assert_eq!(minimal.order, None);
        assert!(serde_json::from_str::<QdpSpec>(r#"{"entry": "rs", "oder": [0]}"#).is_err());
    }
}
