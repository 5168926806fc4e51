//! JSON encoding of `Arg`, `Value`, `TensorMeta` and `Dim` (see docs/graph-format.md).
//!
//! Plain JSON scalars and arrays stand for themselves; everything else is a one-key object
//! naming its kind (`{"ref": "x"}`, `{"dtype": "float32"}`, ...). Written by hand so that
//! parsing a 100k-node graph never buffers values the way untagged derives do.

use super::ir::{Arg, Dim, TensorMeta, Value};
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use std::fmt;

fn special_float(v: f64) -> Option<&'static str> {
    if v.is_nan() {
        Some("nan")
    } else if v == f64::INFINITY {
        Some("inf")
    } else if v == f64::NEG_INFINITY {
        Some("-inf")
    } else {
        None
    }
}

fn parse_special_float<E: de::Error>(s: &str) -> Result<f64, E> {
    match s {
        "nan" => Ok(f64::NAN),
        "inf" => Ok(f64::INFINITY),
        "-inf" => Ok(f64::NEG_INFINITY),
        other => Err(E::custom(format!("unknown float literal {other:?}"))),
    }
}

fn one_key<S: Serializer, V: Serialize + ?Sized>(s: S, key: &str, v: &V) -> Result<S::Ok, S::Error> {
    let mut m = s.serialize_map(Some(1))?;
    m.serialize_entry(key, v)?;
    m.end()
}

fn float<S: Serializer>(s: S, v: f64) -> Result<S::Ok, S::Error> {
    match special_float(v) {
        Some(name) => one_key(s, "float", name),
        None => s.serialize_f64(v),
    }
}

impl Serialize for Arg {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Arg::Ref(n) => one_key(s, "ref", n),
            Arg::None => s.serialize_unit(),
            Arg::Bool(b) => s.serialize_bool(*b),
            Arg::Int(i) => s.serialize_i64(*i),
            Arg::Float(f) => float(s, *f),
            Arg::Str(v) => s.serialize_str(v),
            Arg::List(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for a in items {
                    seq.serialize_element(a)?;
                }
                seq.end()
            }
            Arg::Dtype(v) => one_key(s, "dtype", v),
            Arg::Device(v) => one_key(s, "device", v),
            Arg::Layout(v) => one_key(s, "layout", v),
            Arg::MemoryFormat(v) => one_key(s, "memory_format", v),
            Arg::Slice(parts) => one_key(s, "slice", parts.as_slice()),
            Arg::Opaque(v) => one_key(s, "opaque", v),
        }
    }
}

/// The one-key object kinds shared by `Arg` and `Value`.
enum Kind {
    Ref,
    Dtype,
    Device,
    Layout,
    MemoryFormat,
    Slice,
    Float,
    Opaque,
    Sym,
    Shape,
    Stride,
}

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KindVisitor;
        impl Visitor<'_> for KindVisitor {
            type Value = Kind;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Kind, E> {
                Ok(match v {
                    "ref" => Kind::Ref,
                    "dtype" => Kind::Dtype,
                    "device" => Kind::Device,
                    "layout" => Kind::Layout,
                    "memory_format" => Kind::MemoryFormat,
                    "slice" => Kind::Slice,
                    "float" => Kind::Float,
                    "opaque" => Kind::Opaque,
                    "sym" => Kind::Sym,
                    "shape" => Kind::Shape,
                    "stride" => Kind::Stride,
                    other => return Err(E::custom(format!("unknown key {other:?}"))),
                })
            }
        }
        d.deserialize_identifier(KindVisitor)
    }
}

struct ArgVisitor;

impl<'de> Visitor<'de> for ArgVisitor {
    type Value = Arg;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a node argument")
    }
    fn visit_unit<E>(self) -> Result<Arg, E> {
        Ok(Arg::None)
    }
    fn visit_none<E>(self) -> Result<Arg, E> {
        Ok(Arg::None)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Arg, E> {
        Ok(Arg::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Arg, E> {
        Ok(Arg::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Arg, E> {
        i64::try_from(v).map(Arg::Int).map_err(|_| E::custom(format!("integer {v} does not fit in int64")))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Arg, E> {
        Ok(Arg::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Arg, E> {
        Ok(Arg::Str(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Arg, E> {
        Ok(Arg::Str(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Arg, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(a) = seq.next_element()? {
            items.push(a);
        }
        Ok(Arg::List(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Arg, A::Error> {
        let kind: Kind = map.next_key()?.ok_or_else(|| de::Error::custom("empty object as argument"))?;
        let arg = match kind {
            Kind::Ref => Arg::Ref(map.next_value()?),
            Kind::Dtype => Arg::Dtype(map.next_value()?),
            Kind::Device => Arg::Device(map.next_value()?),
            Kind::Layout => Arg::Layout(map.next_value()?),
            Kind::MemoryFormat => Arg::MemoryFormat(map.next_value()?),
            Kind::Opaque => Arg::Opaque(map.next_value()?),
            Kind::Float => Arg::Float(parse_special_float(&map.next_value::<String>()?)?),
            Kind::Slice => {
                let [a, b, c]: [Arg; 3] = map.next_value()?;
                Arg::Slice(Box::new([a, b, c]))
            }
            Kind::Sym | Kind::Shape | Kind::Stride => {
                return Err(de::Error::custom("symbolic values are node references in arguments"))
            }
        };
        if map.next_key::<Kind>()?.is_some() {
            return Err(de::Error::custom("argument objects have exactly one key"));
        }
        Ok(arg)
    }
}

impl<'de> Deserialize<'de> for Arg {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ArgVisitor)
    }
}

impl Serialize for Dim {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Dim::Const(c) => s.serialize_i64(*c),
            Dim::Sym(e) => s.serialize_str(e),
        }
    }
}

impl<'de> Deserialize<'de> for Dim {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct DimVisitor;
        impl Visitor<'_> for DimVisitor {
            type Value = Dim;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an integer or a symbolic expression string")
            }
            fn visit_i64<E>(self, v: i64) -> Result<Dim, E> {
                Ok(Dim::Const(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Dim, E> {
                i64::try_from(v).map(Dim::Const).map_err(|_| E::custom("dimension does not fit in int64"))
            }
            fn visit_str<E>(self, v: &str) -> Result<Dim, E> {
                Ok(Dim::Sym(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Dim, E> {
                Ok(Dim::Sym(v))
            }
        }
        d.deserialize_any(DimVisitor)
    }
}

impl Serialize for TensorMeta {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(if self.stride.is_some() { 3 } else { 2 }))?;
        m.serialize_entry("dtype", &self.dtype)?;
        m.serialize_entry("shape", &self.shape)?;
        if let Some(st) = &self.stride {
            m.serialize_entry("stride", st)?;
        }
        m.end()
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::None => s.serialize_unit(),
            Value::Tensor(t) => t.serialize(s),
            Value::Tuple(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for v in items {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
            Value::SymInt(e) => one_key(s, "sym", e),
            Value::Int(i) => s.serialize_i64(*i),
            Value::Float(f) => float(s, *f),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Opaque(r) => one_key(s, "opaque", r),
        }
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a node value (tensor meta, tuple, symbolic int or scalar)")
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::None)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::None)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        i64::try_from(v).map(Value::Int).map_err(|_| E::custom("integer does not fit in int64"))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Float(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(v) = seq.next_element()? {
            items.push(v);
        }
        Ok(Value::Tuple(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let (mut dtype, mut shape, mut stride) = (None, None, None);
        while let Some(kind) = map.next_key::<Kind>()? {
            match kind {
                Kind::Sym => return single(map, Value::SymInt),
                Kind::Opaque => return single(map, Value::Opaque),
                Kind::Float => {
                    let s: String = map.next_value()?;
                    return finish(map, Value::Float(parse_special_float(&s)?));
                }
                Kind::Dtype => dtype = Some(map.next_value::<String>()?),
                Kind::Shape => shape = Some(map.next_value::<Vec<Dim>>()?),
                Kind::Stride => stride = Some(map.next_value::<Vec<Dim>>()?),
                _ => return Err(de::Error::custom("unexpected key in a node value")),
            }
        }
        match (dtype, shape) {
            (Some(dtype), Some(shape)) => Ok(Value::Tensor(TensorMeta { dtype, shape, stride })),
            _ => Err(de::Error::custom("tensor values need both \"dtype\" and \"shape\"")),
        }
    }
}

fn single<'de, A: MapAccess<'de>>(mut map: A, make: fn(String) -> Value) -> Result<Value, A::Error> {
    let v = make(map.next_value()?);
    finish(map, v)
}

fn finish<'de, A: MapAccess<'de>>(mut map: A, v: Value) -> Result<Value, A::Error> {
    if map.next_key::<Kind>()?.is_some() {
        return Err(de::Error::custom("this value object has exactly one key"));
    }
    Ok(v)
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T: Serialize + for<'a> Deserialize<'a> + PartialEq + fmt::Debug>(json: &str) -> T {
        let v: T = serde_json::from_str(json).unwrap();
        let back = serde_json::to_string(&v).unwrap();
        assert_eq!(back, json, "re-encoding changed the JSON");
        v
    }

    #[test]
    fn args_round_trip() {
        let a: Arg = round_trip(
            r#"[{"ref":"x"},null,true,3,2.5,"floor",{"dtype":"float16"},{"slice":[null,4,1]},{"float":"-inf"}]"#,
        );
        match a {
            Arg::List(items) => {
                assert_eq!(items[0], Arg::Ref("x".into()));
                assert_eq!(items[3], Arg::Int(3));
                assert_eq!(items[8], Arg::Float(f64::NEG_INFINITY));
            }
            _ => panic!("not a list"),
        }
    }

    #[test]
    fn values_round_trip() {
        let v: Value = round_trip(r#"[{"dtype":"float32","shape":["s0",4],"stride":[4,1]},{"sym":"s0 + 1"},7]"#);
        let Value::Tuple(items) = v else { panic!() };
        assert_eq!(items[0].as_tensor().unwrap().shape, vec![Dim::Sym("s0".into()), Dim::Const(4)]);
        assert_eq!(items[1], Value::SymInt("s0 + 1".into()));
    }

    #[test]
    fn rejects_unknown_keys_and_half_tensors() {
        assert!(serde_json::from_str::<Arg>(r#"{"bogus": 1}"#).is_err());
        assert!(serde_json::from_str::<Value>(r#"{"dtype": "float32"}"#).is_err());
        assert!(serde_json::from_str::<Arg>(r#"{"ref": "a", "dtype": "x"}"#).is_err());
    }
}
