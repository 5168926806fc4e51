//! Reads what the QDP rewrites need from a PTX module: the header (`.version`, `.target`,
//! `.address_size`) and each `.entry` with its parameter declarations and launch directives.
//! Everything else (functions, globals, debug sections, entry bodies) is skipped by balancing
//! braces, so unfamiliar PTX still parses. Every item keeps its byte span in the source, so a
//! rewrite replaces exactly the bytes it means to and leaves the rest of the text as it was.

use super::isa::IsaVersion;
use super::lex::{mask, Parser, Tok};
use super::span::{ptx_err, Span};
use crate::error::Result;
use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Module {
    pub version: IsaVersion,
    /// The version number after `.version`.
    #[serde(skip)]
    pub version_span: Span,
    /// `.target sm_90a` -> `["sm_90a"]`; more with `, debug` and the like.
    pub target: Vec<String>,
    /// Each target word of `target`, in order.
    #[serde(skip)]
    pub target_spans: Vec<Span>,
    pub address_size: Option<u32>,
    pub entries: Vec<Entry>,
    /// cuTile's `.nv_intermediate_source_section { ... }` (Tile IR source, which only ISA 9.4
    /// accepts); from its start to the end of the text, which is where tileiras puts it.
    #[serde(skip)]
    pub intermediate_source: Option<Span>,
    pub has_intermediate_source: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Entry {
    pub name: String,
    pub visible: bool,
    pub params: Vec<Param>,
    /// `.reqntid 128` -> `[128]`; `.reqntid 256, 1, 1` -> `[256, 1, 1]`.
    pub reqntid: Option<Vec<u32>>,
    pub maxntid: Option<Vec<u32>>,
    /// `.language N`: cuTile marks tile kernels with it; it needs PTX ISA >= 9.2.
    pub language: Option<u32>,
    /// The `.language N` directive itself.
    #[serde(skip)]
    pub language_span: Option<Span>,
    /// Every directive between the parameter list and the body, by name (`.reqntid`, ...).
    pub directives: Vec<String>,
    /// From `.visible`/`.entry` to the end of the body.
    #[serde(skip)]
    pub span: Span,
    /// From `.visible`/`.entry` up to (not including) the `{` of the body.
    #[serde(skip)]
    pub header_span: Span,
    /// `{ ... }`, braces included; `None` for a declaration without a body.
    #[serde(skip)]
    pub body: Option<Span>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Param {
    pub name: String,
    /// The element type as written: `.u64`, `.u32`, `.b8`, ...
    pub ty: String,
    /// `name[N]`: a by-value array (a struct or a TMA descriptor).
    pub array_len: Option<u64>,
    /// `.param .align N ...` (the alignment of the parameter itself).
    pub align: Option<u32>,
    /// `.ptr [.space] [.align N]`: the parameter is a pointer to that space.
    pub ptr: Option<PtrQual>,
    /// `.hidden .param ...`: not part of the caller's arguments (cuTile's TMA descriptors).
    pub hidden: bool,
    /// Bytes the parameter takes in the argument buffer.
    pub size: u64,
    /// The whole declaration, `.hidden`/`.param` to the name or `]`.
    #[serde(skip)]
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PtrQual {
    pub space: Option<String>,
    pub align: Option<u32>,
}

impl Module {
    pub fn entry(&self, name: &str) -> Result<&Entry> {
        self.entries.iter().find(|e| e.name == name).ok_or_else(|| {
            let known: Vec<String> = self.entries.iter().map(|e| format!("`{}`", e.name)).collect();
            let known = if known.is_empty() { "none".to_owned() } else { known.join(", ") };
            ptx_err(format!("the PTX has no entry `{name}`; its entries: {known}"))
        })
    }
}

impl Param {
    /// A 64-bit integer, the only kind of parameter that can take a device pointer.
    pub fn is_64bit_scalar(&self) -> bool {
        self.array_len.is_none() && matches!(self.ty.as_str(), ".u64" | ".s64" | ".b64")
    }
    /// A 32-bit integer, what a TensorRT `SymInt32` extra argument fills.
    pub fn is_32bit_int(&self) -> bool {
        self.array_len.is_none() && matches!(self.ty.as_str(), ".u32" | ".s32" | ".b32")
    }
    /// How the declaration reads, for messages: `.u64 .ptr`, `.b8[128]`.
    pub fn describe(&self) -> String {
        let mut s = self.ty.clone();
        if let Some(n) = self.array_len {
            s.push_str(&format!("[{n}]"));
        }
        if self.ptr.is_some() {
            s.push_str(" .ptr");
        }
        if self.hidden {
            s.insert_str(0, ".hidden ");
        }
        s
    }
}

pub fn parse(src: &str) -> Result<Module> {
    let mut p = Parser { src, m: mask(src)?, pos: 0 };
    let mut version = None;
    let mut target = Vec::new();
    let mut target_spans = Vec::new();
    let mut address_size = None;
    let mut entries = Vec::new();
    let mut intermediate_source = None;
    while let Some(t) = p.next() {
        match p.text(t) {
            ".version" => {
                let v = p.word_after(t, "a version number after `.version`")?;
                version = Some((
                    p.text(v).parse::<IsaVersion>().map_err(|_| p.err_at(v, "`.version` needs MAJOR.MINOR"))?,
                    p.span(v),
                ));
            }
            ".target" => loop {
                let w = p.word_after(t, "a target after `.target`")?;
                target.push(p.text(w).to_owned());
                target_spans.push(p.span(w));
                if !p.eat_on_line(b',') {
                    break;
                }
            },
            ".address_size" => {
                let w = p.word_after(t, "a size after `.address_size`")?;
                address_size = Some(p.text(w).parse().map_err(|_| p.err_at(w, "`.address_size` needs a number"))?);
            }
            ".file" | ".loc" => p.skip_line(),
            // Tile IR source, not PTX; tileiras always puts it last.
            ".nv_intermediate_source_section" => {
                intermediate_source = Some(Span { start: t.start, end: src.len() });
                break;
            }
            ".entry" => entries.push(p.entry(t, false)?),
            w @ (".visible" | ".weak" | ".extern") if p.peek().is_some_and(|n| p.text(n) == ".entry") => {
                let visible = w == ".visible";
                p.next();
                entries.push(p.entry(t, visible)?);
            }
            _ => p.skip_statement(t)?,
        }
    }
    let (version, version_span) =
        version.ok_or_else(|| ptx_err("the PTX has no `.version` line; is it PTX at all?"))?;
    Ok(Module {
        version,
        version_span,
        target,
        target_spans,
        address_size,
        entries,
        has_intermediate_source: intermediate_source.is_some(),
        intermediate_source,
    })
}

/// Whether the text in `span` (an entry body) names `ident` anywhere outside comments:
/// `ld.param.u64 %rd1, [ident]`, `mov.b64 %rd2, ident`, ...
pub fn mentions(src: &str, span: Span, ident: &str) -> Result<bool> {
    let sub = span.of(src);
    let mut p = Parser { src: sub, m: mask(sub)?, pos: 0 };
    while let Some(t) = p.next() {
        if t.punct.is_none() && p.text(t) == ident {
            return Ok(true);
        }
    }
    Ok(false)
}

impl<'a> Parser<'a> {
    /// `start` is the first token (`.visible` or `.entry`); `.entry` itself has been consumed.
    fn entry(&mut self, start: Tok, visible: bool) -> Result<Entry> {
        let name_tok = self.next().filter(|t| t.punct.is_none() && !self.text(*t).starts_with('.'));
        let name_tok =
            name_tok.ok_or_else(|| ptx_err(format!("`.entry` on line {} has no name", self.line(start.start))))?;
        let name = self.text(name_tok).to_owned();
        let mut params = Vec::new();
        if self.peek().is_some_and(|t| t.punct == Some(b'(')) {
            self.next();
            params = self.params(&name)?;
        }
        let mut e = Entry {
            name,
            visible,
            params,
            reqntid: None,
            maxntid: None,
            language: None,
            language_span: None,
            directives: Vec::new(),
            span: self.span(start),
            header_span: self.span(start),
            body: None,
        };
        loop {
            let t = self.next().ok_or_else(|| ptx_err(format!("entry `{}` ends before its body", e.name)))?;
            match t.punct {
                Some(b'{') => {
                    let body = self.skip_block(t)?;
                    e.header_span.end = self.src[..t.start].trim_end().len();
                    e.body = Some(body);
                    e.span.end = body.end;
                    return Ok(e);
                }
                Some(b';') => {
                    e.header_span.end = t.start;
                    e.span.end = t.end;
                    return Ok(e);
                }
                Some(_) => return Err(self.err_at(t, &format!("entry `{}`: unexpected text before its body", e.name))),
                None => self.entry_directive(&mut e, t)?,
            }
        }
    }

    /// A directive between the parameter list and the body: `.reqntid 128, 1, 1`,
    /// `.language 7`, `.minnctapersm 1`, `.blocksareclusters`, `.pragma "...";`.
    fn entry_directive(&mut self, e: &mut Entry, t: Tok) -> Result<()> {
        let name = self.text(t);
        if !name.starts_with('.') {
            return Err(self.err_at(t, &format!("entry `{}`: unexpected text before its body", e.name)));
        }
        e.directives.push(name.to_owned());
        if name == ".pragma" {
            while let Some(n) = self.next() {
                if n.punct == Some(b';') {
                    break;
                }
            }
            return Ok(());
        }
        let mut values = Vec::new();
        let mut end = t.end;
        while let Some(n) = self.peek() {
            let is_value = n.punct.is_none() && !self.text(n).starts_with('.');
            if !(is_value || n.punct == Some(b',')) {
                break;
            }
            self.next();
            end = n.end;
            if is_value {
                let v = self
                    .text(n)
                    .parse::<u32>()
                    .map_err(|_| self.err_at(n, &format!("entry `{}`: `{name}` takes numbers", e.name)))?;
                values.push(v);
            }
        }
        match name {
            ".reqntid" => e.reqntid = Some(values),
            ".maxntid" => e.maxntid = Some(values),
            ".language" => {
                e.language = values.first().copied();
                e.language_span = Some(Span { start: t.start, end });
            }
            _ => {}
        }
        Ok(())
    }

    /// The declarations up to the `)` that closes the parameter list (the `(` is consumed).
    fn params(&mut self, entry: &str) -> Result<Vec<Param>> {
        let mut params = Vec::new();
        let mut decl: Vec<Tok> = Vec::new();
        loop {
            let t =
                self.next().ok_or_else(|| ptx_err(format!("the parameter list of entry `{entry}` is never closed")))?;
            match t.punct {
                Some(b',') | Some(b')') => {
                    if !decl.is_empty() {
                        params.push(self.param(entry, params.len(), &decl)?);
                    } else if t.punct == Some(b',') || !params.is_empty() {
                        return Err(self.err_at(t, &format!("entry `{entry}`: empty parameter declaration")));
                    }
                    decl.clear();
                    if t.punct == Some(b')') {
                        return Ok(params);
                    }
                }
                _ => decl.push(t),
            }
        }
    }

    /// `[.hidden] .param [.align N] .type [.ptr [.space] [.align N]] name [ '[' N ']' ]`
    fn param(&self, entry: &str, index: usize, toks: &[Tok]) -> Result<Param> {
        let span = Span { start: toks[0].start, end: toks[toks.len() - 1].end };
        let bad = |why: &str| {
            ptx_err(format!("entry `{entry}`: cannot read parameter {index} `{}`: {why}", span.of(self.src)))
        };
        let number = |k: usize| -> Result<u64> {
            toks.get(k)
                .filter(|t| t.punct.is_none())
                .and_then(|t| self.text(*t).parse().ok())
                .ok_or_else(|| bad("expected a number"))
        };
        let (mut hidden, mut seen_param, mut ty, mut align, mut ptr, mut name) =
            (false, false, None, None, None::<PtrQual>, None);
        let mut array_len = None;
        let mut k = 0;
        while k < toks.len() {
            let t = toks[k];
            let w = self.text(t);
            match (t.punct, w) {
                (None, ".hidden") => hidden = true,
                (None, ".param") => seen_param = true,
                (None, ".ptr") => ptr = Some(PtrQual { space: None, align: None }),
                (None, ".align") => {
                    let n = u32::try_from(number(k + 1)?).map_err(|_| bad("alignment out of range"))?;
                    match ptr.as_mut() {
                        Some(p) => p.align = Some(n),
                        None => align = Some(n),
                    }
                    k += 1;
                }
                (None, ".global" | ".shared" | ".const" | ".local") if ptr.is_some() => {
                    ptr.as_mut().unwrap().space = Some(w.to_owned());
                }
                (None, w) if w.starts_with('.') => {
                    if ty.is_some() || type_bytes(w).is_none() {
                        return Err(bad(&format!("unexpected `{w}`")));
                    }
                    ty = Some(w.to_owned());
                }
                (None, w) if name.is_none() => name = Some(w.to_owned()),
                (Some(b'['), _) if name.is_some() && array_len.is_none() => {
                    array_len = Some(number(k + 1)?);
                    if toks.get(k + 2).and_then(|t| t.punct) != Some(b']') {
                        return Err(bad("expected `]`"));
                    }
                    k += 2;
                }
                _ => return Err(bad(&format!("unexpected `{w}`"))),
            }
            k += 1;
        }
        if !seen_param {
            return Err(bad("no `.param`"));
        }
        let ty = ty.ok_or_else(|| bad("no type"))?;
        let name = name.ok_or_else(|| bad("no name"))?;
        let size = type_bytes(&ty).unwrap_or(0) * array_len.unwrap_or(1);
        Ok(Param { name, ty, array_len, align, ptr, hidden, size, span })
    }
}

/// Size of a PTX fundamental type in bytes (`.u64` -> 8, `.f16x2` -> 4); `None` if not one.
fn type_bytes(ty: &str) -> Option<u64> {
    let t = ty.strip_prefix('.')?;
    let (digits, lanes) = match t.strip_suffix("x2") {
        Some(rest) => (rest, 2),
        None => (t, 1),
    };
    let bits: u64 = digits.trim_start_matches(|c: char| c.is_ascii_alphabetic()).parse().ok()?;
    let kind = &digits[..digits.len() - digits.trim_start_matches(|c: char| c.is_ascii_alphabetic()).len()];
    if !matches!(kind, "b" | "u" | "s" | "f" | "bf") || !bits.is_multiple_of(8) || bits == 0 {
        return None;
    }
    Some(bits / 8 * lanes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRITON: &str = r#"//
// Generated by LLVM NVPTX Back-End
//

.version 9.0
.target sm_90a
.address_size 64

	// .globl	add_kernel              // -- Begin function add_kernel
.visible .entry add_kernel(
	.param .u64 .ptr .global .align 1 add_kernel_param_0,
	.param .u32 add_kernel_param_1,
	.param .u64 .ptr .global .align 1 add_kernel_param_2,
	.param .u64 .ptr .global .align 1 add_kernel_param_3,
	.param .u64 .ptr .global .align 1 add_kernel_param_4
)
.reqntid 128
{
	.reg .b64 	%rd<3>;
	ld.param.b64 	%rd1, [add_kernel_param_0];
	ret;
}
	.file	1 "/tmp/a//b.py"
	.section	.debug_abbrev
	{
.b8 1                                   // Abbreviation Code {
	}
	.section	.debug_macinfo	{	}
"#;

    #[test]
    fn triton_header_and_params() {
        let m = parse(TRITON).unwrap();
        assert_eq!(m.version, IsaVersion::new(9, 0));
        assert_eq!(m.version_span.of(TRITON), "9.0");
        assert_eq!(m.target, ["sm_90a"]);
        assert_eq!(m.address_size, Some(64));
        assert_eq!(m.entries.len(), 1);
        let e = &m.entries[0];
        assert_eq!(e.name, "add_kernel");
        assert!(e.visible);
        assert_eq!(e.reqntid, Some(vec![128]));
        assert_eq!(e.language, None);
        assert_eq!(e.params.len(), 5);
        let p0 = &e.params[0];
        assert_eq!((p0.name.as_str(), p0.ty.as_str(), p0.size), ("add_kernel_param_0", ".u64", 8));
        assert_eq!(p0.ptr, Some(PtrQual { space: Some(".global".into()), align: Some(1) }));
        assert_eq!(p0.span.of(TRITON), ".param .u64 .ptr .global .align 1 add_kernel_param_0");
        assert_eq!(e.params[1].size, 4);
        assert!(e.params[1].is_32bit_int() && p0.is_64bit_scalar());
        assert!(
            e.header_span.of(TRITON).starts_with(".visible .entry add_kernel(")
                && e.header_span.of(TRITON).ends_with(".reqntid 128")
        );
        let body = e.body.unwrap().of(TRITON);
        assert!(body.starts_with('{') && body.ends_with('}') && body.contains("ret;"));
        assert!(mentions(TRITON, e.body.unwrap(), "add_kernel_param_0").unwrap());
        assert!(!mentions(TRITON, e.body.unwrap(), "add_kernel_param_4").unwrap());
    }

    #[test]
    fn hidden_arrays_language_and_three_dim_reqntid() {
        let src = ".version 9.4\n.target sm_90a\n.address_size 64\n\
            .visible .global .align 8 .b8 ___NV_TILE_LAUNCH_META_DATA___[64];\n\
            .visible .entry k(\n.param .u64 .ptr .global .align 1 k_param_0,\n.param .align 8 .b8 k_param_1[16],\n\
            .hidden\t.param .align 64 .b8 k_param_2[128]\n)\n.reqntid 256, 1, 1\n.minnctapersm 1\n.language 7\n\
            {\nmov.b64 %rd5, k_param_2;\nret;\n}\n.nv_intermediate_source_section {\n.source_begin\nentry @k(%a: tile<ptr<f32>>) {\n";
        let m = parse(src).unwrap();
        assert!(m.has_intermediate_source);
        let e = m.entry("k").unwrap();
        assert_eq!(e.reqntid, Some(vec![256, 1, 1]));
        assert_eq!(e.language, Some(7));
        assert_eq!(e.language_span.unwrap().of(src), ".language 7");
        assert_eq!(e.directives, [".reqntid", ".minnctapersm", ".language"]);
        let p1 = &e.params[1];
        assert_eq!((p1.ty.as_str(), p1.array_len, p1.align, p1.size, p1.hidden), (".b8", Some(16), Some(8), 16, false));
        assert_eq!(p1.describe(), ".b8[16]");
        let p2 = &e.params[2];
        assert!(p2.hidden);
        assert_eq!(p2.size, 128);
        assert_eq!(p2.span.of(src), ".hidden\t.param .align 64 .b8 k_param_2[128]");
        assert!(mentions(src, e.body.unwrap(), "k_param_2").unwrap());
    }

    #[test]
    fn comments_and_layout_do_not_matter() {
        let src = "/* header */ .version 8.7 // comment\n.target sm_90a // x\n\
            /* .entry fake( .param .u32 z ) { } */\n\
            .entry plain /* name */ ( .param .u32 a /* , .param .u32 b */ , // c\n .param\n.u64\tb )\n.maxntid 64,1,1 { ret; }\n\
            .entry noparams { ret; }\n.entry empty() { ret; }\n";
        let m = parse(src).unwrap();
        assert_eq!(m.version, IsaVersion::new(8, 7));
        assert_eq!(m.address_size, None);
        let names: Vec<&str> = m.entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["plain", "noparams", "empty"]);
        let e = &m.entries[0];
        assert!(!e.visible);
        assert_eq!(e.maxntid, Some(vec![64, 1, 1]));
        assert_eq!(e.params.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(e.params[1].span.of(src), ".param\n.u64\tb");
        assert!(m.entries[1].params.is_empty() && m.entries[2].params.is_empty());
    }

    #[test]
    fn functions_globals_and_prototypes_are_skipped() {
        let src = ".version 8.7\n.target sm_90a\n.address_size 64\n\
            .extern .func (.param .b32 func_retval0) vprintf(.param .b64 a, .param .b64 b);\n\
            .global .align 4 .b8 tbl[8] = {1, 2, 3, 4, 5, 6, 7, 8};\n\
            .func helper(.param .b32 x) { ret; }\n\
            .weak .entry w(.param .u32 w_param_0) { { ret; } }\n";
        let m = parse(src).unwrap();
        assert_eq!(m.entries.len(), 1);
        assert_eq!(m.entries[0].name, "w");
        assert!(!m.entries[0].visible);
    }

    #[test]
    fn malformed_ptx_is_refused_clearly() {
        let err = |s: &str| parse(s).unwrap_err().message;
        assert!(err(".target sm_90a\n").contains("no `.version`"));
        assert!(err(".version 9\n").contains("MAJOR.MINOR"));
        assert!(err(".version 9.0 /* never closed").contains("never closed"));
        assert!(err(".version 9.0\n.entry k(.param .u32 a { ret; }").contains("entry `k`"));
        let e = err(".version 9.0\n.entry k(.param .u32 a, .param .q32 b) { ret; }");
        assert_eq!(e, "entry `k`: cannot read parameter 1 `.param .q32 b`: unexpected `.q32`");
        assert!(err(".version 9.0\n.entry k(.param .u32 a) { ret; ").contains("never closed"));
        assert!(err(".version 9.0\n.entry k(.param .u32 a,) { ret; }").contains("empty parameter declaration"));
        assert!(err(".version 9.0\n.entry k(.param .u32 a) .reqntid x { ret; }").contains("`.reqntid` takes numbers"));
        let m = parse(".version 9.0\n.entry k() { ret; }").unwrap();
        assert_eq!(m.entry("nope").unwrap_err().message, "the PTX has no entry `nope`; its entries: `k`");
    }

    #[test]
    fn type_sizes() {
        for (t, n) in [(".u64", 8), (".s32", 4), (".b8", 1), (".f16x2", 4), (".bf16", 2), (".b128", 16), (".f64", 8)] {
            assert_eq!(type_bytes(t), Some(n), "{t}");
        }
        for t in [".pred", ".global", ".ptr", "u32", ".q32"] {
            assert_eq!(type_bytes(t), None, "{t}");
        }
    }
}
