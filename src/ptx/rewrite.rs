//! Text rewrites that adapt a kernel's PTX to TensorRT's AOT launch. Each parses the text, edits
//! only the bytes it must, and returns new text; anything it cannot do safely is refused with a
//! message naming the entry and parameter.

use super::isa::{self, IsaVersion};
use super::parse::{mentions, parse, Entry, Module};
use super::span::{ptx_err, Span};
use crate::error::Result;

/// Reorder the parameter declarations of `entry`: new parameter `i` is old parameter `order[i]`.
///
/// The body refers to parameters by name, so this changes the calling convention without
/// touching the body. Refused for entries with `.hidden` parameters: those are filled by the
/// driver's tile-kernel launch, TensorRT cannot supply them, and where they may sit after a
/// reordering is unknown.
pub fn permute_params(ptx: &str, entry: &str, order: &[usize]) -> Result<String> {
    let m = parse(ptx)?;
    let e = m.entry(entry)?;
    check_permutation(e, order)?;
    refuse_hidden(e, "reorder its parameters for the TensorRT launch")?;
    let edits = order
        .iter()
        .enumerate()
        .map(|(new, &old)| (e.params[new].span, e.params[old].span.of(ptx).to_owned()))
        .collect();
    Ok(apply(ptx, edits))
}

/// Labels for Triton's trailing scratch parameters, in the order Triton appends them.
const SCRATCH_KINDS: [&str; 2] = ["global scratch", "profile scratch"];

/// Drop the last `sizes.len()` parameters of `entry`, which Triton appends as `global_scratch`
/// and `profile_scratch` pointers; `sizes` are their byte sizes from `compiled.metadata`
/// (`global_scratch_size`, `profile_scratch_size`). TensorRT passes neither, so only a kernel
/// that needs no scratch at all can run: refused when any size is non-zero, or when the body
/// still reads a dropped parameter.
pub fn drop_trailing_scratch(ptx: &str, entry: &str, sizes: &[u64]) -> Result<String> {
    if sizes.is_empty() {
        return Ok(ptx.to_owned());
    }
    let m = parse(ptx)?;
    let e = m.entry(entry)?;
    let n = e.params.len();
    if sizes.len() > n {
        return Err(ptx_err(format!(
            "entry `{entry}` has {n} parameter(s), fewer than the {} trailing scratch parameter(s) to drop",
            sizes.len()
        )));
    }
    let keep = n - sizes.len();
    for (k, (&size, p)) in sizes.iter().zip(&e.params[keep..]).enumerate() {
        let kind = SCRATCH_KINDS.get(k).copied().unwrap_or("scratch");
        if size > 0 {
            return Err(ptx_err(format!(
                "entry `{entry}` needs {size} bytes of {kind} (parameter `{}`), which the TensorRT AOT launch cannot provide; \
                 avoid what needs it (device-side TMA descriptors from tl.make_tensor_descriptor, ...)",
                p.name
            )));
        }
        if !p.is_64bit_scalar() || p.hidden {
            return Err(ptx_err(format!(
                "entry `{entry}`: parameter {} `{}` is {}, not a {kind} pointer; is the number of trailing scratch parameters right?",
                keep + k,
                p.name,
                p.describe()
            )));
        }
        if let Some(body) = e.body {
            if mentions(ptx, body, &p.name)? {
                return Err(ptx_err(format!(
                    "entry `{entry}`: the body reads parameter `{}` ({kind}), so it cannot be dropped even though its size is 0",
                    p.name
                )));
            }
        }
    }
    // Cut from the end of the last kept declaration so its separator (", ") goes too.
    let from = if keep == 0 { e.params[0].span.start } else { e.params[keep - 1].span.end };
    let cut = Span { start: from, end: e.params[n - 1].span.end };
    Ok(apply(ptx, vec![(cut, String::new())]))
}

/// Refuse PTX whose `.version` is newer than `max`, the newest ISA the target driver JITs.
/// Nothing is relabelled; see [`relabel_version`] for that.
pub fn check_version(ptx: &str, max: IsaVersion) -> Result<()> {
    isa::check_version(parse(ptx)?.version, max)
}

/// Lower `.version` to `to` and delete `.language` directives (which need ISA >= 9.2).
///
/// An explicit, separate step on purpose: the ISA label says which instructions the text may
/// use, and relabelling does not remove newer ones, so the driver may still reject the result,
/// or worse. Removing `.language` turns a cuTile tile kernel into a plain SIMT kernel; that
/// is known to work only for simple cuTile kernels (docs/verification.md says where it was seen),
/// and cannot work with `.hidden` TMA-descriptor parameters, which nothing then fills, so those
/// entries are refused. Text already at or below `to` comes back unchanged.
pub fn relabel_version(ptx: &str, to: IsaVersion) -> Result<String> {
    let m = parse(ptx)?;
    if m.version <= to {
        return Ok(ptx.to_owned());
    }
    if m.has_intermediate_source {
        return Err(ptx_err(format!(
            "the PTX carries cuTile's .nv_intermediate_source_section, which needs PTX ISA 9.4, so it cannot be relabelled {to}; \
             extract the PTX from the CUBIN with debug_ptx_from_cubin, which stops before that section"
        )));
    }
    for e in &m.entries {
        refuse_hidden(e, &format!("relabel its PTX from ISA {} to {to}", m.version))?;
    }
    let mut edits = vec![(m.version_span, to.to_string())];
    for e in &m.entries {
        if let Some(s) = e.language_span {
            edits.push((whole_line(ptx, s), String::new()));
        }
    }
    Ok(apply(ptx, edits))
}

/// `.target sm_90a` -> `.target sm_90`: drop the arch-specific suffix, so the PTX is plain
/// sm_90 code that the driver also JIT-compiles for later GPUs. Whether the kernel uses
/// arch-specific instructions (wgmma, setmaxnreg, ...) is not checked here: assemble the
/// result for the plain target to find out. Text without such a suffix comes back unchanged.
pub fn drop_arch_suffix(ptx: &str) -> Result<String> {
    let m = parse(ptx)?;
    let mut edits = Vec::new();
    for (word, span) in m.target.iter().zip(&m.target_spans) {
        if let Some(base) = word.strip_suffix('a') {
            if base.starts_with("sm_") && base[3..].chars().all(|c| c.is_ascii_digit()) && base.len() > 3 {
                edits.push((*span, base.to_owned()));
            }
        }
    }
    Ok(apply(ptx, edits))
}

pub(crate) fn check_permutation(e: &Entry, order: &[usize]) -> Result<()> {
    let n = e.params.len();
    let mut seen = vec![0usize; n];
    let mut out_of_range = Vec::new();
    for &k in order {
        match seen.get_mut(k) {
            Some(c) => *c += 1,
            None => out_of_range.push(k),
        }
    }
    let twice: Vec<usize> = (0..n).filter(|&k| seen[k] > 1).collect();
    let missing: Vec<usize> = (0..n).filter(|&k| seen[k] == 0).collect();
    if order.len() == n && out_of_range.is_empty() && twice.is_empty() {
        return Ok(());
    }
    let mut why = Vec::new();
    if order.len() != n {
        why.push(format!("it has {} index(es)", order.len()));
    }
    if !out_of_range.is_empty() {
        why.push(format!("{out_of_range:?} out of range"));
    }
    if !twice.is_empty() {
        why.push(format!("{twice:?} repeated"));
    }
    if !missing.is_empty() {
        why.push(format!("{missing:?} missing"));
    }
    Err(ptx_err(format!(
        "entry `{}`: order {order:?} is not a permutation of its {n} parameter(s) 0..{n}: {}",
        e.name,
        why.join(", ")
    )))
}

pub(crate) fn refuse_hidden(e: &Entry, action: &str) -> Result<()> {
    match e.params.iter().find(|p| p.hidden) {
        None => Ok(()),
        Some(p) => Err(ptx_err(format!(
            "entry `{}`: parameter `{}` is .hidden ({}, a TMA descriptor that only the driver's tile-kernel launch fills in); \
             TensorRT passes only (inputs, int32 extras, outputs) and cannot supply it, so tta will not {action}; \
             ship the CUBIN, or write the kernel so that tileiras does not use TMA",
            e.name,
            p.name,
            p.describe()
        ))),
    }
}

/// `s` widened to its whole line, newline included, when nothing else is on that line.
fn whole_line(src: &str, s: Span) -> Span {
    let line_start = src[..s.start].rfind('\n').map_or(0, |k| k + 1);
    let line_end = src[s.end..].find('\n').map_or(src.len(), |k| s.end + k + 1);
    let alone = src[line_start..s.start].trim().is_empty() && src[s.end..line_end].trim().is_empty();
    if alone {
        Span { start: line_start, end: line_end }
    } else {
        s
    }
}

/// Replace non-overlapping spans; the edits may come in any order.
fn apply(src: &str, mut edits: Vec<(Span, String)>) -> String {
    edits.sort_by_key(|(s, _)| s.start);
    let mut out = String::with_capacity(src.len());
    let mut at = 0;
    for (s, text) in edits {
        debug_assert!(s.start >= at, "overlapping PTX edits");
        out.push_str(&src[at..s.start]);
        out.push_str(&text);
        at = s.end;
    }
    out.push_str(&src[at..]);
    out
}

/// The parsed module of a rewrite's output; the rewrites above keep PTX parseable, so a
/// failure here is a bug in them.
pub(crate) fn reparse(ptx: &str) -> Result<Module> {
    parse(ptx).map_err(|e| ptx_err(format!("internal error: rewritten PTX does not parse: {}", e.message)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    const SRC: &str = ".version 9.4\n.target sm_90a\n.address_size 64\n\
        .visible .entry k(\n\t.param .u64 .ptr .global .align 1 k_param_0,\n\t.param .u32 k_param_1,\n\
        \t.param .u64 .ptr .global .align 1 k_param_2,\n\t.param .u64 .ptr .global .align 1 k_param_3,\n\
        \t.param .u64 .ptr .global .align 1 k_param_4\n)\n.reqntid 128\n.language 7\n{\n\
        ld.param.b64 %rd1, [k_param_0];\nld.param.b32 %r1, [k_param_1];\nld.param.b64 %rd2, [k_param_2];\nret;\n}\n";

    fn names(ptx: &str) -> Vec<String> {
        parse(ptx).unwrap().entries[0].params.iter().map(|p| p.name.clone()).collect()
    }

    #[test]
    fn permute_moves_declarations_only() {
        let out = permute_params(SRC, "k", &[1, 0, 2, 4, 3]).unwrap();
        assert_eq!(names(&out), ["k_param_1", "k_param_0", "k_param_2", "k_param_4", "k_param_3"]);
        assert!(out.contains("(\n\t.param .u32 k_param_1,\n\t.param .u64 .ptr .global .align 1 k_param_0,\n"));
        let body = |s: &str| s[s.find("{\n").unwrap()..].to_owned();
        assert_eq!(body(&out), body(SRC));
        assert_eq!(out.len(), SRC.len());
        assert_eq!(permute_params(SRC, "k", &[0, 1, 2, 3, 4]).unwrap(), SRC);
    }

    #[test]
    fn permute_refuses_non_permutations() {
        let err = |o: &[usize]| permute_params(SRC, "k", o).unwrap_err();
        let e = err(&[0, 0, 1, 2, 3]);
        assert_eq!(e.kind, ErrorKind::Ptx);
        assert_eq!(e.message, "entry `k`: order [0, 0, 1, 2, 3] is not a permutation of its 5 parameter(s) 0..5: [0] repeated, [4] missing");
        assert!(err(&[0, 1, 2]).message.contains("it has 3 index(es), [3, 4] missing"));
        assert!(err(&[0, 1, 2, 3, 9]).message.contains("[9] out of range, [4] missing"));
        assert!(permute_params(SRC, "q", &[0]).unwrap_err().message.contains("no entry `q`; its entries: `k`"));
    }

    #[test]
    fn permute_refuses_hidden_params() {
        let src = ".version 9.4\n.entry g(.param .u64 g_param_0, .param .u32 g_param_1,\n\
            .hidden .param .align 64 .b8 g_param_2[128]) { mov.b64 %rd1, g_param_2; }";
        let e = permute_params(src, "g", &[1, 0, 2]).unwrap_err();
        assert!(
            e.message.starts_with("entry `g`: parameter `g_param_2` is .hidden (.hidden .b8[128], a TMA descriptor"),
            "{}",
            e.message
        );
        assert!(e.message.contains("TensorRT passes only (inputs, int32 extras, outputs) and cannot supply it"));
    }

    #[test]
    fn drop_scratch_cuts_the_tail() {
        let out = drop_trailing_scratch(SRC, "k", &[0, 0]).unwrap();
        assert_eq!(names(&out), ["k_param_0", "k_param_1", "k_param_2"]);
        assert!(out.contains("\t.param .u64 .ptr .global .align 1 k_param_2\n)\n.reqntid 128"));
        assert_eq!(drop_trailing_scratch(SRC, "k", &[]).unwrap(), SRC);
        let only = ".version 9.0\n.entry s(.param .u64 a, .param .u64 b) { ret; }";
        assert_eq!(drop_trailing_scratch(only, "s", &[0, 0]).unwrap(), ".version 9.0\n.entry s() { ret; }");
    }

    #[test]
    fn drop_scratch_refuses_what_it_cannot_drop() {
        let e = drop_trailing_scratch(SRC, "k", &[128, 0]).unwrap_err();
        assert!(
            e.message.starts_with("entry `k` needs 128 bytes of global scratch (parameter `k_param_3`), which the TensorRT AOT launch cannot provide"),
            "{}",
            e.message
        );
        let e = drop_trailing_scratch(SRC, "k", &[0, 64]).unwrap_err();
        assert!(e.message.contains("needs 64 bytes of profile scratch (parameter `k_param_4`)"));
        let e = drop_trailing_scratch(SRC, "k", &[0, 0, 0]).unwrap_err();
        assert_eq!(e.message, "entry `k`: the body reads parameter `k_param_2` (global scratch), so it cannot be dropped even though its size is 0");
        let e = drop_trailing_scratch(SRC, "k", &[0, 0, 0, 0]).unwrap_err();
        assert_eq!(e.message, "entry `k`: parameter 1 `k_param_1` is .u32, not a global scratch pointer; is the number of trailing scratch parameters right?");
        let e = drop_trailing_scratch(SRC, "k", &[0; 6]).unwrap_err();
        assert!(e.message.contains("has 5 parameter(s), fewer than the 6"));
    }

    #[test]
    fn version_check_and_explicit_relabel() {
        let max = IsaVersion::new(9, 0);
        let e = check_version(SRC, max).unwrap_err();
        assert!(
            e.message.starts_with("PTX ISA 9.4 needs a CUDA 13.4 driver; the target driver is CUDA 13.0"),
            "{}",
            e.message
        );
        check_version(SRC, IsaVersion::new(9, 4)).unwrap();
        let out = relabel_version(SRC, max).unwrap();
        assert!(out.starts_with(".version 9.0\n.target sm_90a\n"));
        assert!(out.contains(".reqntid 128\n{\n") && !out.contains(".language"));
        check_version(&out, max).unwrap();
        assert_eq!(relabel_version(&out, max).unwrap(), out);
        assert_eq!(relabel_version(SRC, IsaVersion::new(9, 4)).unwrap(), SRC);
    }

    #[test]
    fn relabel_refuses_tile_only_content() {
        let hidden = ".version 9.4\n.entry g(.hidden .param .align 64 .b8 g_param_0[128]) { ret; }";
        let e = relabel_version(hidden, IsaVersion::new(9, 0)).unwrap_err();
        assert!(e.message.contains("so tta will not relabel its PTX from ISA 9.4 to 9.0"), "{}", e.message);
        let section = ".version 9.4\n.entry g() { ret; }\n.nv_intermediate_source_section {\n";
        let e = relabel_version(section, IsaVersion::new(9, 0)).unwrap_err();
        assert!(e.message.contains(".nv_intermediate_source_section, which needs PTX ISA 9.4"));
    }

    #[test]
    fn line_widening() {
        let s = "a\n.language 7\nb";
        assert_eq!(whole_line(s, Span { start: 2, end: 13 }), Span { start: 2, end: 14 });
        let s = "a .language 7 b";
        assert_eq!(whole_line(s, Span { start: 2, end: 13 }), Span { start: 2, end: 13 });
    }

    #[test]
    fn drops_only_the_arch_suffix_of_the_target() {
        let src =
            ".version 9.0\n.target sm_90a // arch\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\nret;\n}\n";
        let out = drop_arch_suffix(src).unwrap();
        assert_eq!(out, src.replacen("sm_90a", "sm_90", 1));
        assert_eq!(drop_arch_suffix(&out).unwrap(), out);
        let debug = ".version 9.0\n.target sm_100a, debug\n.entry k()\n{\nret;\n}\n";
        assert!(drop_arch_suffix(debug).unwrap().contains(".target sm_100, debug"));
    }
}
