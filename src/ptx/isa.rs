//! PTX ISA versions against CUDA driver versions. TensorRT embeds AOT plugin PTX in the engine
//! and the driver on the target machine JIT-compiles it, so a `.version` newer than that driver
//! knows fails at load time (`CUDA_ERROR_UNSUPPORTED_PTX_VERSION`), which TensorRT reports only
//! at inference as an `onShapeChange` failure. Checking here moves that failure to build time.

use crate::error::{Error, ErrorKind, Result};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A PTX ISA version, `.version 9.0` -> 9.0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IsaVersion {
    pub major: u32,
    pub minor: u32,
}

/// A CUDA version as `cuDriverGetVersion` reports it (13000 -> 13.0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CudaVersion {
    pub major: u32,
    pub minor: u32,
}

impl IsaVersion {
    pub const fn new(major: u32, minor: u32) -> Self {
        IsaVersion { major, minor }
    }
    /// Triton's `ptx_version` option for this ISA (9.0 -> 90).
    pub fn triton_option(self) -> u32 {
        self.major * 10 + self.minor
    }
}

impl CudaVersion {
    pub const fn new(major: u32, minor: u32) -> Self {
        CudaVersion { major, minor }
    }
    /// From `cuDriverGetVersion`'s integer (13000 -> 13.0, 12080 -> 12.8).
    pub fn from_driver_int(v: u32) -> Self {
        CudaVersion { major: v / 1000, minor: (v % 1000) / 10 }
    }
}

/// The newest PTX ISA each CUDA driver JIT-compiles (PTX ISA release history; checked against
/// `cuda.bindings.utils.get_minimal_required_cuda_ver_from_ptx_ver` from cuda-bindings 13.5).
/// CUDA 12.6 brought no new ISA, so 8.5 maps to 12.5.
const DRIVER_MAX_ISA: &[(CudaVersion, IsaVersion)] = &[
    (CudaVersion::new(11, 0), IsaVersion::new(7, 0)),
    (CudaVersion::new(11, 1), IsaVersion::new(7, 1)),
    (CudaVersion::new(11, 2), IsaVersion::new(7, 2)),
    (CudaVersion::new(11, 3), IsaVersion::new(7, 3)),
    (CudaVersion::new(11, 4), IsaVersion::new(7, 4)),
    (CudaVersion::new(11, 5), IsaVersion::new(7, 5)),
    (CudaVersion::new(11, 6), IsaVersion::new(7, 6)),
    (CudaVersion::new(11, 7), IsaVersion::new(7, 7)),
    (CudaVersion::new(11, 8), IsaVersion::new(7, 8)),
    (CudaVersion::new(12, 0), IsaVersion::new(8, 0)),
    (CudaVersion::new(12, 1), IsaVersion::new(8, 1)),
    (CudaVersion::new(12, 2), IsaVersion::new(8, 2)),
    (CudaVersion::new(12, 3), IsaVersion::new(8, 3)),
    (CudaVersion::new(12, 4), IsaVersion::new(8, 4)),
    (CudaVersion::new(12, 5), IsaVersion::new(8, 5)),
    (CudaVersion::new(12, 6), IsaVersion::new(8, 5)),
    (CudaVersion::new(12, 7), IsaVersion::new(8, 6)),
    (CudaVersion::new(12, 8), IsaVersion::new(8, 7)),
    (CudaVersion::new(12, 9), IsaVersion::new(8, 8)),
    (CudaVersion::new(13, 0), IsaVersion::new(9, 0)),
    (CudaVersion::new(13, 1), IsaVersion::new(9, 1)),
    (CudaVersion::new(13, 2), IsaVersion::new(9, 2)),
    (CudaVersion::new(13, 3), IsaVersion::new(9, 3)),
    (CudaVersion::new(13, 4), IsaVersion::new(9, 4)),
    (CudaVersion::new(13, 5), IsaVersion::new(9, 5)),
];

/// The newest PTX ISA a driver of this CUDA version accepts; `None` outside the table (before
/// 11.0, or newer than this table knows: pass the ISA explicitly then).
pub fn max_isa_for_driver(cuda: CudaVersion) -> Option<IsaVersion> {
    DRIVER_MAX_ISA.iter().find(|(c, _)| *c == cuda).map(|(_, i)| *i)
}

/// The oldest CUDA driver that accepts this PTX ISA, if the table knows it.
pub fn min_driver_for_isa(isa: IsaVersion) -> Option<CudaVersion> {
    DRIVER_MAX_ISA.iter().find(|(_, i)| *i == isa).map(|(c, _)| *c)
}

/// Refuse PTX whose ISA is newer than `max`, the newest the target driver accepts. The message
/// says which driver the PTX needs and how to get PTX that fits.
pub fn check_version(found: IsaVersion, max: IsaVersion) -> Result<()> {
    if found <= max {
        return Ok(());
    }
    let needs = match min_driver_for_isa(found) {
        Some(c) => format!("PTX ISA {found} needs a CUDA {c} driver"),
        None => format!("PTX ISA {found} needs a driver newer than any this check knows"),
    };
    let target = match min_driver_for_isa(max) {
        Some(c) => format!("the target driver is CUDA {c} (PTX ISA up to {max})"),
        None => format!("the target driver accepts PTX ISA up to {max}"),
    };
    Err(Error::new(
        ErrorKind::Ptx,
        format!(
            "{needs}; {target}; compile with ptx_version={} (Triton), use CuTeDSL's cu12 flavour, or ship CUBIN",
            max.triton_option()
        ),
    ))
}

fn parse_dotted(s: &str, what: &str) -> Result<(u32, u32)> {
    let bad =
        || Error::new(ErrorKind::Input, format!("`{s}` is not a {what} version (expected MAJOR.MINOR, e.g. 9.0)"));
    let (ma, mi) = s.trim().split_once('.').ok_or_else(bad)?;
    Ok((ma.parse().map_err(|_| bad())?, mi.parse().map_err(|_| bad())?))
}

impl FromStr for IsaVersion {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        parse_dotted(s, "PTX ISA").map(|(a, b)| IsaVersion::new(a, b))
    }
}

impl FromStr for CudaVersion {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        parse_dotted(s, "CUDA").map(|(a, b)| CudaVersion::new(a, b))
    }
}

impl fmt::Display for IsaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl fmt::Display for CudaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

// As "9.0" strings in JSON, the way users write them.
impl Serialize for IsaVersion {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for IsaVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(|e: Error| serde::de::Error::custom(e.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_matches_the_research_notes() {
        // kernel-dsl-aot.md §4: 8.7 -> 12.8, 8.8 -> 12.9, 9.0 -> 13.0, ..., 9.5 -> 13.5.
        for (isa, cuda) in [("8.7", "12.8"), ("8.8", "12.9"), ("9.0", "13.0"), ("9.4", "13.4"), ("9.5", "13.5")] {
            let isa: IsaVersion = isa.parse().unwrap();
            let cuda: CudaVersion = cuda.parse().unwrap();
            assert_eq!(min_driver_for_isa(isa), Some(cuda));
            assert_eq!(max_isa_for_driver(cuda), Some(isa));
        }
        assert_eq!(max_isa_for_driver(CudaVersion::new(12, 6)), Some(IsaVersion::new(8, 5)));
        assert_eq!(min_driver_for_isa(IsaVersion::new(8, 5)), Some(CudaVersion::new(12, 5)));
        assert_eq!(max_isa_for_driver(CudaVersion::new(14, 0)), None);
        assert_eq!(CudaVersion::from_driver_int(13000), CudaVersion::new(13, 0));
        assert_eq!(CudaVersion::from_driver_int(12080), CudaVersion::new(12, 8));
    }

    #[test]
    fn too_new_is_refused_with_a_way_out() {
        let e = check_version(IsaVersion::new(9, 4), IsaVersion::new(9, 0)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Ptx);
        assert_eq!(
            e.message,
            "PTX ISA 9.4 needs a CUDA 13.4 driver; the target driver is CUDA 13.0 (PTX ISA up to 9.0); \
             compile with ptx_version=90 (Triton), use CuTeDSL's cu12 flavour, or ship CUBIN"
        );
        check_version(IsaVersion::new(9, 0), IsaVersion::new(9, 0)).unwrap();
        check_version(IsaVersion::new(8, 7), IsaVersion::new(9, 0)).unwrap();
        let e = check_version(IsaVersion::new(9, 9), IsaVersion::new(9, 7)).unwrap_err();
        assert!(e.message.starts_with("PTX ISA 9.9 needs a driver newer than any this check knows; the target driver accepts PTX ISA up to 9.7"), "{}", e.message);
    }

    #[test]
    fn versions_parse_and_print() {
        assert_eq!("9.0".parse::<IsaVersion>().unwrap(), IsaVersion::new(9, 0));
        assert_eq!(IsaVersion::new(8, 7).to_string(), "8.7");
        assert!(IsaVersion::new(8, 8) < IsaVersion::new(9, 0));
        assert!(IsaVersion::new(9, 10) > IsaVersion::new(9, 4));
        for bad in ["9", "9.x", "", "v9.0"] {
            let e = bad.parse::<IsaVersion>().unwrap_err();
            assert_eq!(e.kind, ErrorKind::Input, "{bad}");
        }
        let v: IsaVersion = serde_json::from_str("\"9.0\"").unwrap();
        assert_eq!(serde_json::to_string(&v).unwrap(), "\"9.0\"");
    }
}
