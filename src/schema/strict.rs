//! OpenAI strict mode: the schema rewritten so the provider can enforce it exactly.
//!
//! Strict mode needs `additionalProperties: false` on every object and every property listed in
//! `required`. Properties that were optional become nullable instead (`["string", "null"]`, or
//! `anyOf` with `{"type": "null"}` when there is no plain type), so the model can still omit a
//! value by sending `null`. `default` is removed because strict mode rejects it.

use serde_json::{Map, Value, json};

/// The strict form of `schema` (which is left unchanged).
pub fn to_strict(schema: &Value) -> Value {
    let mut out = schema.clone();
    strict_in_place(&mut out);
    out
}

fn strict_in_place(v: &mut Value) {
    let Value::Object(map) = v else { return };
    map.remove("default");
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
}
