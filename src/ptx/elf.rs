//! Just enough of a CUBIN (a 64-bit little-endian ELF) to get at two things: the PTX that
//! tileiras embeds when cuTile compiles with `--lineinfo` (cuTile has no PTX output, and
//! TensorRT's AOT plugins take PTX), and the kernel parameter layout ptxas records, which shows
//! whether a rewritten PTX assembles to the argument order TensorRT passes.

use super::span::ptx_err;
use crate::error::Result;
use serde::Serialize;

struct Section<'a> {
    name: &'a [u8],
    data: &'a [u8],
}

/// One kernel parameter as ptxas laid it out in the argument buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct KernelParam {
    pub ordinal: u16,
    pub offset: u16,
    pub size: u16,
}

const SHT_NOBITS: u32 = 8;

// Offsets come from the file: every addition is checked, so a huge one is "truncated", never
// a wrapped position (release builds do not trap on overflow).
fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at.checked_add(2)?)?.try_into().ok()?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at.checked_add(4)?)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at.checked_add(8)?)?.try_into().ok()?))
}

fn sections(elf: &[u8]) -> Result<Vec<Section<'_>>> {
    if elf.get(..4) != Some(b"\x7fELF".as_slice()) {
        return Err(ptx_err("not a CUBIN: the data does not start with the ELF magic"));
    }
    if elf.get(4) != Some(&2) || elf.get(5) != Some(&1) {
        return Err(ptx_err("not a CUBIN: only 64-bit little-endian ELF files are read"));
    }
    let truncated = || ptx_err("truncated CUBIN: its ELF headers point past the end of the data");
    let shoff = u64_at(elf, 0x28).ok_or_else(truncated)? as usize;
    let shentsize = u16_at(elf, 0x3A).ok_or_else(truncated)? as usize;
    let mut shnum = u16_at(elf, 0x3C).ok_or_else(truncated)? as usize;
    let mut shstrndx = u16_at(elf, 0x3E).ok_or_else(truncated)? as usize;
    if shoff == 0 || shentsize < 0x40 {
        return Err(ptx_err("the CUBIN has no section headers"));
    }
    let header = |i: usize| -> Result<(u32, u32, usize, usize, u32)> {
        let h = shoff.checked_add(i.checked_mul(shentsize).ok_or_else(truncated)?).ok_or_else(truncated)?;
        let field = |k: usize| h.checked_add(k).ok_or_else(truncated);
        let name = u32_at(elf, h).ok_or_else(truncated)?;
        let ty = u32_at(elf, field(4)?).ok_or_else(truncated)?;
        let off = u64_at(elf, field(0x18)?).ok_or_else(truncated)? as usize;
        let size = u64_at(elf, field(0x20)?).ok_or_else(truncated)? as usize;
        let link = u32_at(elf, field(0x28)?).ok_or_else(truncated)?;
        Ok((name, ty, off, size, link))
    };
    // Extended numbering: counts too large for the 16-bit fields live in section 0.
    if shnum == 0 {
        shnum = header(0)?.3;
    }
    if shstrndx == 0xffff {
        shstrndx = header(0)?.4 as usize;
    }
    let data_of = |ty: u32, off: usize, size: usize| -> Result<&[u8]> {
        if ty == SHT_NOBITS {
            return Ok(&[]);
        }
        elf.get(off..off.checked_add(size).ok_or_else(truncated)?).ok_or_else(truncated)
    };
    let (_, ty, off, size, _) = header(shstrndx)?;
    let names = data_of(ty, off, size)?;
    (0..shnum)
        .map(|i| {
            let (name, ty, off, size, _) = header(i)?;
            let name = names.get(name as usize..).ok_or_else(truncated)?;
            let name = &name[..name.iter().position(|&c| c == 0).unwrap_or(name.len())];
            Ok(Section { name, data: data_of(ty, off, size)? })
        })
        .collect()
}

fn section<'a>(elf: &'a [u8], name: &str) -> Result<Option<&'a [u8]>> {
    Ok(sections(elf)?.into_iter().find(|s| s.name == name.as_bytes()).map(|s| s.data))
}

/// The PTX tileiras embedded in a cuTile CUBIN, from section `.nv_debug_ptx_txt` (one line per
/// NUL-terminated string), up to the `.nv_intermediate_source_section` that follows the
/// kernels: that holds Tile IR, not PTX, and needs PTX ISA 9.4.
pub fn debug_ptx_from_cubin(cubin: &[u8]) -> Result<String> {
    let data = section(cubin, ".nv_debug_ptx_txt")?.ok_or_else(|| {
        ptx_err(
            "the CUBIN has no .nv_debug_ptx_txt section: tileiras embeds its PTX only with --lineinfo \
             (cuTile's export_kernel always passes it), and other compilers do not embed PTX",
        )
    })?;
    let text = std::str::from_utf8(data)
        .map_err(|e| ptx_err(format!("the CUBIN's .nv_debug_ptx_txt is not UTF-8 text: {e}")))?;
    let lines: Vec<&str> =
        text.split('\0').take_while(|l| !l.trim_start().starts_with(".nv_intermediate_source_section")).collect();
    let ptx = lines.join("\n");
    let ptx = ptx.trim_matches('\n');
    if !ptx.contains(".version") {
        return Err(ptx_err("the CUBIN's .nv_debug_ptx_txt section holds no PTX (no `.version` line)"));
    }
    Ok(format!("{ptx}\n"))
}

/// `.nv.info` attribute holding one parameter's ordinal, offset and size (bits 18.. of the last
/// word hold the size).
const EIATTR_KPARAM_INFO: u8 = 0x17;
/// The same in the layout tileiras 13.4 writes for kernels with `.hidden` parameters (the low 16
/// bits of the last word hold the size; inferred from its output, where the sizes and offsets
/// match the PTX declarations). The hidden parameters themselves get no record.
const EIATTR_KPARAM_INFO_V2: u8 = 0x45;
/// `.nv.info` value format whose payload is a 16-bit length and that many bytes.
const EIFMT_SVAL: u8 = 4;

/// The parameters of kernel `entry` as laid out in the CUBIN, by ordinal, from the
/// `EIATTR_KPARAM_INFO` records of its `.nv.info.<entry>` section.
pub fn cubin_params(cubin: &[u8], entry: &str) -> Result<Vec<KernelParam>> {
    let info = section(cubin, &format!(".nv.info.{entry}"))?
        .ok_or_else(|| ptx_err(format!("the CUBIN has no kernel `{entry}` (no .nv.info.{entry} section)")))?;
    let bad = || ptx_err(format!("the CUBIN's .nv.info.{entry} section is malformed"));
    let mut params = Vec::new();
    let mut i = 0;
    while i < info.len() {
        let (format, attr) = (info[i], *info.get(i + 1).ok_or_else(bad)?);
        if format != EIFMT_SVAL {
            // Other formats carry a value of at most two bytes inline.
            i += 4;
            continue;
        }
        let len = u16_at(info, i + 2).ok_or_else(bad)? as usize;
        let value = info.get(i + 4..i + 4 + len).ok_or_else(bad)?;
        if (attr == EIATTR_KPARAM_INFO || attr == EIATTR_KPARAM_INFO_V2) && len >= 12 {
            let word = u32_at(value, 8).ok_or_else(bad)?;
            params.push(KernelParam {
                ordinal: u16_at(value, 4).ok_or_else(bad)?,
                offset: u16_at(value, 6).ok_or_else(bad)?,
                size: if attr == EIATTR_KPARAM_INFO { (word >> 18) & 0x3fff } else { word & 0xffff } as u16,
            });
        }
        i += 4 + len;
    }
    params.sort_by_key(|p| p.ordinal);
    Ok(params)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ELF64 with the given sections (names and contents), laid out like a CUBIN.
    fn elf(secs: &[(&str, &[u8])]) -> Vec<u8> {
        let mut names = vec![0u8];
        let mut name_offs = Vec::new();
        for (n, _) in secs.iter().copied().chain([(".shstrtab", &[][..])]) {
            name_offs.push(names.len() as u32);
            names.extend_from_slice(n.as_bytes());
            names.push(0);
        }
        let mut out = vec![0u8; 0x40];
        out[..6].copy_from_slice(b"\x7fELF\x02\x01");
        let mut placed = Vec::new();
        for (_, d) in secs {
            placed.push((out.len(), d.len()));
            out.extend_from_slice(d);
        }
        placed.push((out.len(), names.len()));
        out.extend_from_slice(&names);
        let shoff = out.len();
        out.extend_from_slice(&[0u8; 0x40]); // section 0
        for (k, (off, size)) in placed.iter().enumerate() {
            let mut h = [0u8; 0x40];
            h[..4].copy_from_slice(&name_offs[k].to_le_bytes());
            h[4..8].copy_from_slice(&1u32.to_le_bytes());
            h[0x18..0x20].copy_from_slice(&(*off as u64).to_le_bytes());
            h[0x20..0x28].copy_from_slice(&(*size as u64).to_le_bytes());
            out.extend_from_slice(&h);
        }
        out[0x28..0x30].copy_from_slice(&(shoff as u64).to_le_bytes());
        out[0x3A..0x3C].copy_from_slice(&0x40u16.to_le_bytes());
        out[0x3C..0x3E].copy_from_slice(&((secs.len() + 2) as u16).to_le_bytes());
        out[0x3E..0x40].copy_from_slice(&((secs.len() + 1) as u16).to_le_bytes());
        out
    }

    #[test]
    fn debug_ptx_stops_before_the_tile_ir() {
        let txt = b"\0\0\0\0.version 9.4\0.target sm_90a\0\0.entry k()\0{\0ret;\0}\0\0.nv_intermediate_source_section {\0x\0}\0";
        let cubin = elf(&[(".text.k", b"\x01\x02"), (".nv_debug_ptx_txt", txt)]);
        assert_eq!(debug_ptx_from_cubin(&cubin).unwrap(), ".version 9.4\n.target sm_90a\n\n.entry k()\n{\nret;\n}\n");
    }

    #[test]
    fn refusals() {
        let e = debug_ptx_from_cubin(&elf(&[(".text.k", b"")])).unwrap_err();
        assert!(e.message.contains("no .nv_debug_ptx_txt section: tileiras embeds its PTX only with --lineinfo"));
        assert!(debug_ptx_from_cubin(b".version 9.0").unwrap_err().message.contains("ELF magic"));
        let mut c = elf(&[(".nv_debug_ptx_txt", b".version 9.4\0")]);
        c.truncate(c.len() - 0x60); // into the header of section 1
        assert!(debug_ptx_from_cubin(&c).unwrap_err().message.contains("truncated"));
        let e = cubin_params(&elf(&[]), "k").unwrap_err();
        assert_eq!(e.message, "the CUBIN has no kernel `k` (no .nv.info.k section)");
    }

    #[test]
    fn kparam_info_records() {
        let mut info = Vec::new();
        info.extend_from_slice(&[3, 0x50, 0, 0]); // a two-byte inline value
        for (ord, off, size) in [(1u16, 8u16, 4u32), (0, 0, 8)] {
            info.extend_from_slice(&[EIFMT_SVAL, EIATTR_KPARAM_INFO, 12, 0, 0, 0, 0, 0]);
            info.extend_from_slice(&ord.to_le_bytes());
            info.extend_from_slice(&off.to_le_bytes());
            info.extend_from_slice(&((size << 18) | 0xf000).to_le_bytes());
        }
        info.extend_from_slice(&[EIFMT_SVAL, EIATTR_KPARAM_INFO_V2, 12, 0, 0, 0, 0, 0, 2, 0, 16, 0, 8, 0, 0, 4]);
        let got = cubin_params(&elf(&[(".nv.info.k", &info)]), "k").unwrap();
        let kp = |ordinal, offset, size| KernelParam { ordinal, offset, size };
        assert_eq!(got, [kp(0, 0, 8), kp(1, 8, 4), kp(2, 16, 8)]);
    }
}
