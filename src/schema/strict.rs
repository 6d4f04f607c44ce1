//! OpenAI strict mode: the schema rewritten so the provider can enforce it exactly.
//!
//! Strict mode needs `additionalProperties: false` on every object and every property listed in
//! `required`. Properties that were optional become nullable instead (`["string", "null"]`, or
//! `anyOf` with `{"type": "null"}` when there is no plain type), so the model can still omit a
//! value by sending `null`. `default` is removed because strict mode rejects it.
//!
//! Strict mode also accepts only some constraint keywords (OpenAI's Structured Outputs guide,
//! "Supported schemas": <https://platform.openai.com/docs/guides/structured-outputs#supported-schemas>):
//! for strings `pattern` and `format` with one of `date-time`, `time`, `date`, `duration`,
//! `email`, `hostname`, `ipv4`, `ipv6`, `uuid`; for numbers `multipleOf`, `maximum`,
//! `exclusiveMaximum`, `minimum`, `exclusiveMinimum`; for arrays `minItems`, `maxItems`. The
//! others are lowered where an equivalent exists and dropped otherwise; see [`to_strict`].

use serde_json::{Map, Value, json};

/// The strict form of `schema` (which is left unchanged).
///
/// Besides the object rules above, only the constraint keywords OpenAI documents for strict
/// mode remain:
///
/// - an integer `format` (`uint8`, `int32`, `uint64`…, as `schemars` writes for Rust integer
///   types) becomes the bounds it means: `minimum`/`maximum` for 8-, 16- and 32-bit types,
///   `minimum: 0` for wider unsigned ones (a bound already there and tighter is kept); other
///   formats outside the documented list (`float`, `double`, `uri`…) are dropped;
/// - `minLength`/`maxLength` become a `pattern` (`^[\s\S]{min,max}$`) when the schema has no
///   pattern of its own, and are dropped otherwise;
/// - keywords strict mode does not list (`uniqueItems`, `contains`, `minProperties`,
///   `maxProperties`, `patternProperties`, `propertyNames`, `dependentRequired`,
///   `dependentSchemas`, `if`/`then`/`else`, `unevaluated*`, `contentEncoding`,
///   `contentMediaType`) are dropped.
///
/// What is dropped is still checked: a registry validates arguments against the tool's own
/// schema, not this one, and answers the model with the problem.
pub fn to_strict(schema: &Value) -> Value {
    let mut out = schema.clone();
    strict_in_place(&mut out);
    out
}

/// String formats strict mode accepts.
const FORMATS: [&str; 9] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Keywords strict mode does not list, with no equivalent it does.
const DROPPED: [&str; 17] = [
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "minProperties",
    "maxProperties",
    "patternProperties",
    "propertyNames",
    "dependentRequired",
    "dependentSchemas",
    "if",
    "then",
    "else",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contentEncoding",
    "contentMediaType",
];

/// The bounds an integer `format` means: (minimum, maximum), `None` where a bound adds nothing
/// (the 64-bit and wider types a JSON number rarely reaches).
fn integer_bounds(format: &str) -> Option<(Option<i64>, Option<i64>)> {
    Some(match format {
        "int8" => (Some(i8::MIN.into()), Some(i8::MAX.into())),
        "int16" => (Some(i16::MIN.into()), Some(i16::MAX.into())),
        "int32" => (Some(i32::MIN.into()), Some(i32::MAX.into())),
        "uint8" => (Some(0), Some(u8::MAX.into())),
        "uint16" => (Some(0), Some(u16::MAX.into())),
        "uint32" => (Some(0), Some(u32::MAX.into())),
        "uint" | "uint64" | "uint128" | "usize" => (Some(0), None),
        "int" | "int64" | "int128" | "isize" => (None, None),
        _ => return None,
    })
}

/// Keeps only the constraint keywords strict mode documents, lowering what has an equivalent.
fn lower_keywords(map: &mut Map<String, Value>) {
    for key in DROPPED {
        map.remove(key);
    }
    if let Some(Value::String(format)) = map.get("format")
        && !FORMATS.contains(&format.as_str())
    {
        if let Some((min, max)) = integer_bounds(format) {
            if let Some(min) = min {
                tighten(map, "minimum", min, |old, new| new > old);
            }
            if let Some(max) = max {
                tighten(map, "maximum", max, |old, new| new < old);
            }
        }
        map.remove("format");
    }
    let min = map.remove("minLength").and_then(|v| v.as_u64());
    let max = map.remove("maxLength").and_then(|v| v.as_u64());
    if !map.contains_key("pattern") && (min.is_some() || max.is_some()) {
        let min = min.unwrap_or(0);
        let max = max.map(|m| m.to_string()).unwrap_or_default();
        map.insert(
            "pattern".into(),
            json!(format!("^[\\s\\S]{{{min},{max}}}$")),
        );
    }
}

/// Sets `key` to `bound` unless a number there is already at least as tight.
fn tighten(map: &mut Map<String, Value>, key: &str, bound: i64, tighter: fn(f64, f64) -> bool) {
    let keep = match map.get(key).and_then(Value::as_f64) {
        Some(old) => !tighter(old, bound as f64),
        None => false,
    };
    if !keep {
        map.insert(key.into(), json!(bound));
    }
}

fn strict_in_place(v: &mut Value) {
    let Value::Object(map) = v else { return };
    map.remove("default");
    lower_keywords(map);
    let is_object = map.get("type").is_some_and(|t| {
        t == "object"
            || t.as_array()
                .is_some_and(|a| a.iter().any(|x| x == "object"))
    }) || map.contains_key("properties");
    if is_object {
        let props = map
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        let all: Vec<String> = match &*props {
            Value::Object(props) => props.keys().cloned().collect(),
            _ => Vec::new(),
        };
        let required: Vec<String> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        if let Some(Value::Object(props)) = map.get_mut("properties") {
            for (name, prop) in props.iter_mut() {
                if !required.contains(name) {
                    make_nullable(prop);
                }
            }
        }
        map.insert(
            "required".into(),
            Value::Array(all.into_iter().map(Value::String).collect()),
        );
        map.insert("additionalProperties".into(), Value::Bool(false));
    }
    for key in ["properties", "$defs", "definitions", "patternProperties"] {
        if let Some(Value::Object(children)) = map.get_mut(key) {
            children.values_mut().for_each(strict_in_place);
        }
    }
    for key in ["items", "additionalItems", "not"] {
        if let Some(child) = map.get_mut(key) {
            match child {
                Value::Array(items) => items.iter_mut().for_each(strict_in_place),
                other => strict_in_place(other),
            }
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(items)) = map.get_mut(key) {
            items.iter_mut().for_each(strict_in_place);
        }
    }
}

fn make_nullable(prop: &mut Value) {
    let Value::Object(map) = prop else { return };
    match map.get_mut("type") {
        // Objects and arrays become `anyOf` with null, the form pydantic and openai-python
        // produce; scalars use the type list the structured-outputs guide shows.
        Some(Value::String(t)) if t == "object" || t == "array" => {
            let inner = std::mem::take(map);
            map.insert(
                "anyOf".into(),
                json!([Value::Object(inner), {"type": "null"}]),
            );
        }
        Some(Value::String(t)) if t != "null" => {
            let t = std::mem::take(t);
            map.insert("type".into(), json!([t, "null"]));
            if let Some(Value::Array(values)) = map.get_mut("enum")
                && !values.contains(&Value::Null)
            {
                values.push(Value::Null);
            }
        }
        Some(Value::Array(types)) => {
            if !types.iter().any(|t| t == "null") {
                types.push(json!("null"));
            }
        }
        Some(_) => {}
        None => {
            let inner = std::mem::take(map);
            let mut wrapped = Map::new();
            wrapped.insert(
                "anyOf".into(),
                json!([Value::Object(inner), {"type": "null"}]),
            );
            *map = wrapped;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_becomes_nullable_and_required() {
        let s = json!({
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
                "tags": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
                "any": {"description": "no type"}
            },
            "required": ["city"]
        });
        let out = to_strict(&s);
        assert_eq!(out["required"], json!(["city", "unit", "tags", "any"]));
        assert_eq!(out["additionalProperties"], json!(false));
        assert_eq!(out["properties"]["city"]["type"], json!("string"));
        assert_eq!(out["properties"]["unit"]["type"], json!(["string", "null"]));
        assert_eq!(out["properties"]["unit"]["enum"], json!(["c", "f", null]));
        assert!(out["properties"]["unit"].get("default").is_none());
        assert_eq!(
            out["properties"]["tags"]["anyOf"][1],
            json!({"type": "null"})
        );
        let item = &out["properties"]["tags"]["anyOf"][0]["items"];
        assert_eq!(item["additionalProperties"], json!(false));
        assert_eq!(item["properties"]["k"]["type"], json!(["string", "null"]));
        assert_eq!(
            out["properties"]["any"]["anyOf"][1],
            json!({"type": "null"})
        );
    }

    /// A typed tool's parameters, as `schemars` writes them for Rust integer types.
    #[cfg(feature = "tools")]
    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Typed {
        small: u8,
        count: u32,
        offset: i64,
        ratio: f64,
        when: Option<String>,
    }

    #[cfg(feature = "tools")]
    #[test]
    fn typed_integer_formats_become_bounds() {
        let params = crate::tools::parameters_for::<Typed>().unwrap();
        assert_eq!(params["properties"]["small"]["format"], "uint8");
        let out = to_strict(&params);
        let p = &out["properties"];
        assert_eq!(p["small"]["minimum"], json!(0));
        assert_eq!(p["small"]["maximum"], json!(255));
        assert_eq!(p["count"]["minimum"], json!(0));
        assert_eq!(p["count"]["maximum"], json!(4_294_967_295_u64));
        assert!(p["offset"].get("minimum").is_none());
        assert_eq!(p["offset"]["type"], "integer");
        assert_eq!(p["ratio"]["type"], "number");
        for name in ["small", "count", "offset", "ratio", "when"] {
            assert!(p[name].get("format").is_none(), "{name}: {}", p[name]);
        }
        assert_eq!(p["when"]["type"], json!(["string", "null"]));
        assert_only_documented_keywords(&out);
    }

    #[test]
    fn unsupported_keywords_are_lowered_or_dropped() {
        let s = json!({
            "type": "object",
            "minProperties": 1,
            "properties": {
                "id": {"type": "string", "format": "uuid"},
                "site": {"type": "string", "format": "uri", "minLength": 3, "maxLength": 80},
                "code": {"type": "string", "pattern": "^[A-Z]+$", "maxLength": 4},
                "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true, "maxItems": 5},
                "level": {"type": "integer", "format": "uint8", "minimum": 1, "maximum": 900},
                "delta": {"type": "integer", "format": "int16", "maximum": 10}
            },
            "required": ["id"]
        });
        let out = to_strict(&s);
        let p = &out["properties"];
        assert_eq!(p["id"]["format"], "uuid");
        assert!(p["site"].get("format").is_none());
        assert_eq!(p["site"]["pattern"], "^[\\s\\S]{3,80}$");
        assert_eq!(p["code"]["pattern"], "^[A-Z]+$");
        assert!(p["code"].get("maxLength").is_none());
        assert!(p["tags"]["anyOf"][0].get("uniqueItems").is_none());
        assert_eq!(p["tags"]["anyOf"][0]["maxItems"], 5);
        // A tighter bound already there is kept; a looser one is tightened.
        assert_eq!(p["level"]["minimum"], 1);
        assert_eq!(p["level"]["maximum"], 255);
        assert_eq!(p["delta"]["minimum"], -32768);
        assert_eq!(p["delta"]["maximum"], 10);
        assert!(out.get("minProperties").is_none());
        assert_only_documented_keywords(&out);
    }

    /// Every key of every schema node is structural, an annotation, or a documented constraint.
    fn assert_only_documented_keywords(v: &Value) {
        const KNOWN: [&str; 23] = [
            "type",
            "properties",
            "required",
            "additionalProperties",
            "items",
            "anyOf",
            "enum",
            "const",
            "$ref",
            "$defs",
            "definitions",
            "description",
            "title",
            "$schema",
            "pattern",
            "format",
            "multipleOf",
            "maximum",
            "exclusiveMaximum",
            "minimum",
            "exclusiveMinimum",
            "minItems",
            "maxItems",
        ];
        let Value::Object(map) = v else { return };
        for (key, child) in map {
            assert!(KNOWN.contains(&key.as_str()), "{key} in {v}");
            match (key.as_str(), child) {
                ("properties" | "$defs" | "definitions", Value::Object(children)) => {
                    children.values().for_each(assert_only_documented_keywords)
                }
                ("anyOf", Value::Array(items)) => {
                    items.iter().for_each(assert_only_documented_keywords)
                }
                ("items", child) => assert_only_documented_keywords(child),
                _ => {}
            }
        }
    }
}
