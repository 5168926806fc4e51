//! The instruction forms a module uses, for deciding whether it needs an architecture-specific
//! target (`sm_90a`) without running ptxas again. PTX spells every variant that a target may lack
//! in the opcode's qualifiers (`wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16`,
//! `cvt.rn.satfinite.e2m1x2.f32`), so whether an assembler accepts a module for a target follows
//! from its set of opcodes, the special registers it reads and its entries' directives. A set that
//! ptxas once accepted for a plain target is then known good for that target: any module whose
//! forms all lie in it needs no second assembly (`tta.aot.ptxabi.plain_target` keeps that record).

use std::collections::BTreeSet;

use super::lex::{mask, Parser};
use super::parse::parse;
use super::stores::instructions;
use crate::error::Result;

/// Every opcode with its qualifiers, every special register read (`%tid`, `%cluster_ctarank`),
/// every entry directive (`.reqntid`, `.maxclusterrank`) and every other dotted word anywhere in
/// the text (the types and state spaces of declarations: `.reg`, `.b128`, `.shared`), sorted;
/// `.func` bodies included. More forms than decide the target only make the record stricter.
pub fn instruction_forms(src: &str) -> Result<Vec<String>> {
    let module = parse(src)?;
    let mut forms = BTreeSet::new();
    for inst in instructions(src)? {
        if !inst.opcode.starts_with(|c: char| c.is_ascii_alphabetic()) {
            continue; // an initializer's values (`= {1, 2}`), not an instruction
        }
        for w in inst.operands.iter().flat_map(|o| &o.words) {
            // Registers the kernel declares are numbered (`%r12`, `%rd3`); special registers are
            // named (`%tid.x`, `%clock64` aside), and a few unnumbered declared ones only add forms.
            let name = w.split('.').next().unwrap_or(w);
            if name.starts_with('%') && !name.bytes().any(|c| c.is_ascii_digit()) {
                forms.insert(name.to_owned());
            }
        }
        forms.insert(inst.opcode);
    }
    for e in &module.entries {
        forms.extend(e.directives.iter().cloned());
    }
    let mut p = Parser { src, m: mask(src)?, pos: 0 };
    while let Some(t) = p.next() {
        let w = p.text(t);
        if t.punct.is_none() && w.starts_with('.') && w[1..].starts_with(|c: char| c.is_ascii_alphabetic()) {
            forms.insert(w.to_owned());
        }
    }
    Ok(forms.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = ".version 8.7\n.target sm_90a\n.address_size 64\n\
        .global .align 4 .b8 table[8] = {1, 2, 3, 4, 5, 6, 7, 8};\n\
        .func (.param .b32 r) helper(.param .b32 a)\n{\n.reg .b32 %r<3>;\nld.param.b32 %r1, [a];\n\
        setmaxnreg.inc.sync.aligned.u32 232;\nst.param.b32 [r], %r1;\nret;\n}\n\
        .visible .entry k(\n .param .u64 k_param_0\n)\n.reqntid 128, 1, 1\n.maxnreg 168\n{\n\
        mov.u32 %r1, %tid.x;\n@%p1 bra $L__BB0_2;\n$L__BB0_2:\n\
        wgmma.fence.sync.aligned;\nret;\n}\n";

    #[test]
    fn forms_cover_every_body_the_special_registers_and_the_directives() {
        let forms = instruction_forms(PTX).unwrap();
        for f in [
            "ld.param.b32",
            "setmaxnreg.inc.sync.aligned.u32", // in a .func
            "st.param.b32",
            "ret",
            "mov.u32",
            "%tid",
            "bra",
            "wgmma.fence.sync.aligned",
            ".reqntid",
            ".maxnreg",
            ".b32", // a declaration's type
            ".global",
        ] {
            assert!(forms.iter().any(|x| x == f), "{f} missing from {forms:?}");
        }
        // Neither numbered registers, labels, declarations nor an initializer's values.
        assert!(!forms.iter().any(|x| x.starts_with("%r") || x.starts_with('$') || x.starts_with('1')), "{forms:?}");
        assert!(!forms.iter().any(|x| x.starts_with(".reg ") || x.starts_with(".global ")), "{forms:?}");
    }

    #[test]
    fn the_first_instruction_after_an_entry_header_is_read() {
        let src = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\nexit;\n}\n";
        let forms = instruction_forms(src).unwrap();
        assert!(forms.iter().any(|f| f == "exit"), "{forms:?}");
    }
}
