//! Gemini `parameters`: a JSON Schema lowered to the OpenAPI-subset `Schema` message the Gemini
//! API accepts.
//!
//! The Gemini API parses `parameters` as a protobuf message: an unknown key fails the whole
//! request ("Unknown name \"additionalProperties\" … Cannot find field"), and several JSON Schema
//! shapes are rejected by its validator (reports such as mem0ai/mem0#1820, agno-agi/agno#2112,
//! zed-industries/zed#44875; the accepted subset is the `Schema` type of python-genai).
//! Lowering rewrites a schema into that subset, keeping what the model needs to call the tool:
//!
//! - `$ref` into the same document (`#/$defs/X`, `#/definitions/X`, any `#/…` pointer) is
//!   inlined, sibling keys winning over the definition's; a cycle, an external or anchor
//!   reference is a typed error naming the definition and the path;
//! - `allOf` is merged into one schema (properties united, `required` united, types
//!   intersected); `oneOf` becomes `anyOf`;
//! - `anyOf` keeps only the union: a `{"type":"null"}` branch becomes `nullable: true` on every
//!   branch, a single remaining branch replaces the union, and sibling keys are moved into the
//!   branches (constraints merged, `description`/`title` copied) because Gemini rejects siblings
//!   of `anyOf`; a branch whose type contradicts a sibling `type` can never match and is dropped;
//! - a type list becomes `nullable` (`["string","null"]`) or an `anyOf` with each type's own
//!   keywords (`["string","integer"]`);
//! - `const` becomes a one-value `enum`; `null` in an enum becomes `nullable`; `""` is removed
//!   from enums (Gemini: "enum[3]: cannot be empty"); numeric and boolean enums become string
//!   enums with `format: "enum"` and their JSON type kept; an enum mixing kinds becomes an `anyOf`
//!   of one enum per kind;
//! - a schema without a type that nothing else types (JSON Schema's "any value") becomes an
//!   `anyOf` of string, number, boolean, object and array-of-strings, because Gemini rejects a
//!   node without a type; an array without `items` gets that as its items;
//! - an object without properties is a plain `{"type":"object"}` when nested and means "no
//!   parameters" at the root (Gemini: "properties: should be non-empty for OBJECT type");
//!   `required` only names properties that exist ("required[0]: property is not defined");
//! - only the keys of Gemini's `Schema` are kept. Dropped: `$schema`, `$id`, `$comment`,
//!   `additionalProperties`, `patternProperties`, `propertyNames`, `unevaluated*`,
//!   `uniqueItems`, `contains`, `multipleOf`, `not`, `if`/`then`/`else`, `dependent*`,
//!   `readOnly`/`writeOnly`/`deprecated`, vendor `x-…` keys, string formats other than `enum`
//!   and `date-time`, number formats other than `int32`/`int64`/`float`/`double`, and
//!   `default`/`example` next to a union of several branches, and `default: null`.
//!   `exclusiveMinimum`/`exclusiveMaximum` become inclusive
//!   `minimum`/`maximum`; `examples[0]` becomes `example`; a tuple (`prefixItems`, array `items`)
//!   becomes an array of the union of its item schemas with its length as bounds.
//!
//! Kept: `type`, `format`, `title`, `description`, `nullable`, `enum`, `default`, `example`,
//! `properties`, `required`, `propertyOrdering`, `minProperties`, `maxProperties`, `items`,
//! `minItems`, `maxItems`, `minLength`, `maxLength`, `pattern`, `minimum`, `maximum`, `anyOf`.
//!
//! Lowering never drops a property: a root the subset cannot express (a union, a free-form map
//! of `additionalProperties`, a non-object) is an error, and so is a schema that grows past
//! [`MAX_NODES`] nodes or [`MAX_DEPTH`] levels once its references are inlined.

use serde_json::{Map, Value, json};

use crate::error::{Error, Result};
use crate::types::json_kind;

/// The most schema nodes lowering produces before giving up (inlining shared definitions can
/// grow a schema exponentially; LiteLLM hit this:
/// BerriAI/litellm#19098).
pub const MAX_NODES: usize = 20_000;

/// The deepest nesting lowering follows, counting inlined references.
pub const MAX_DEPTH: usize = 64;

/// Hint appended to errors about shapes only `parametersJsonSchema` can carry.
const JSON_SCHEMA_HINT: &str =
    "schema_mode \"json_schema\" sends the schema unchanged as parametersJsonSchema";

/// Output key order, so goldens and printed schemas read the same way every time.
const KEY_ORDER: [&str; 22] = [
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "default",
    "example",
    "properties",
    "required",
    "propertyOrdering",
    "minProperties",
    "maxProperties",
    "items",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "anyOf",
];

const OBJECT_KEYS: [&str; 7] = [
    "properties",
    "required",
    "additionalProperties",
    "patternProperties",
    "minProperties",
    "maxProperties",
    "propertyOrdering",
];
const ARRAY_KEYS: [&str; 5] = [
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "uniqueItems",
];
const STRING_KEYS: [&str; 3] = ["minLength", "maxLength", "pattern"];
const NUMBER_KEYS: [&str; 5] = [
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];

/// Lowers a tool's parameters schema. `path` names the schema in errors
/// (`tools[2].parameters`). `Ok(None)`: the tool takes no parameters and the declaration must
/// carry none.
pub fn to_gemini(schema: &Value, path: &str) -> Result<Option<Value>> {
    if is_empty_root(schema) {
        check_free_form(schema, path)?;
        return Ok(None);
    }
    let mut lowerer = Lowerer {
        root: schema,
        root_path: path,
        expanding: Vec::new(),
        depth: 0,
        nodes: 0,
    };
    let Some(mut root) = lowerer.lower(schema, path)? else {
        return Err(Error::input(
            path,
            "the schema `false` accepts nothing; a tool's parameters must accept an object",
        ));
    };
    if root.contains_key("anyOf") {
        return Err(Error::input(
            path,
            format!(
                "the parameters root is a union (anyOf/oneOf or a type list); Gemini needs one \
                 object schema there ({JSON_SCHEMA_HINT})"
            ),
        ));
    }
    match root.get("type").and_then(Value::as_str) {
        Some("object") => {}
        other => {
            return Err(Error::input(
                path,
                format!(
                    "parameters must describe an object, got type {}",
                    other.unwrap_or("none")
                ),
            ));
        }
    }
    root.remove("nullable");
    if !root.contains_key("properties") {
        check_free_form(schema, path)?;
        return Ok(None);
    }
    Ok(Some(reorder(Value::Object(root))))
}

/// A root that says nothing about its properties: `{}`, `true`, or an object schema whose
/// `properties` is empty or absent and that has no other structure.
fn is_empty_root(schema: &Value) -> bool {
    match schema {
        Value::Bool(true) => true,
        Value::Object(map) => {
            let structural = [
                "$ref", "allOf", "anyOf", "oneOf", "enum", "const", "items", "not",
            ];
            let typed_other = map
                .get("type")
                .is_some_and(|t| t.as_str() != Some("object"));
            let has_properties = map
                .get("properties")
                .and_then(Value::as_object)
                .is_some_and(|p| !p.is_empty());
            !typed_other && !has_properties && !structural.iter().any(|k| map.contains_key(*k))
        }
        _ => false,
    }
}

/// A root object whose keys are free-form (`additionalProperties` with a schema, or
/// `patternProperties`) cannot be expressed: without named properties the model could pass
/// nothing, which would silently drop what the tool needs.
fn check_free_form(schema: &Value, path: &str) -> Result<()> {
    let nonempty = |key: &str| {
        schema
            .get(key)
            .and_then(Value::as_object)
            .is_some_and(|m| !m.is_empty())
    };
    if nonempty("additionalProperties") || nonempty("patternProperties") {
        return Err(Error::input(
            path,
            format!(
                "the parameters object only has free-form keys (additionalProperties or \
                 patternProperties); Gemini's `parameters` needs named properties \
                 ({JSON_SCHEMA_HINT})"
            ),
        ));
    }
    Ok(())
}

/// `path.key`, or `path["key"]` when the key is not a plain word.
pub(crate) fn key_path(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '-'));
    if plain {
        format!("{path}.{key}")
    } else {
        let quoted = serde_json::to_string(key).unwrap_or_else(|_| format!("{key:?}"));
        format!("{path}[{quoted}]")
    }
}

/// The JSON kind of an enum value, integers apart from other numbers.
fn value_kind(v: &Value) -> &'static str {
    match v {
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        other => json_kind(other),
    }
}

/// An "any value" schema: every kind Gemini can express without more structure.
fn any_schema(annotations: &Map<String, Value>, nullable: bool) -> Map<String, Value> {
    let kinds = [
        json!({"type": "string"}),
        json!({"type": "number"}),
        json!({"type": "boolean"}),
        json!({"type": "object"}),
        json!({"type": "array", "items": {"type": "string"}}),
    ];
    let branches = kinds
        .into_iter()
        .map(|mut b| {
            if let Value::Object(m) = &mut b {
                annotate(m, annotations, nullable);
            }
            b
        })
        .collect();
    let mut out = Map::new();
    out.insert("anyOf".into(), Value::Array(branches));
    out
}

/// Copies `description`/`title` into `branch` where it has none, and sets `nullable`.
fn annotate(branch: &mut Map<String, Value>, annotations: &Map<String, Value>, nullable: bool) {
    for (k, v) in annotations {
        if !branch.contains_key(k) {
            branch.insert(k.clone(), v.clone());
        }
    }
    if nullable {
        branch.insert("nullable".into(), Value::Bool(true));
    }
}

/// The `description` and `title` of a schema.
fn annotations_of(map: &Map<String, Value>) -> Map<String, Value> {
    ["description", "title"]
        .iter()
        .filter_map(|k| {
            map.get(*k)
                .filter(|v| v.is_string())
                .map(|v| ((*k).to_owned(), v.clone()))
        })
        .collect()
}

/// Whether a raw union branch only allows null: `{"type": "null"}`, `{"const": null}` or
/// `{"enum": [null]}` (with annotations at most).
fn is_raw_null(branch: &Value) -> bool {
    let Some(m) = branch.as_object() else {
        return false;
    };
    let null_only = m.get("type").and_then(Value::as_str) == Some("null")
        || m.get("const") == Some(&Value::Null)
        || m.get("enum") == Some(&json!([null]));
    null_only
        && m.keys().all(|k| {
            matches!(
                k.as_str(),
                "type" | "const" | "enum" | "description" | "title" | "nullable"
            )
        })
}

/// Whether a value can have both JSON Schema types.
fn types_meet(a: &str, b: &str) -> bool {
    let (a, b) = (a.to_ascii_lowercase(), b.to_ascii_lowercase());
    a == b
        || matches!(
            (a.as_str(), b.as_str()),
            ("integer", "number") | ("number", "integer")
        )
}

/// Whether a lowered schema only says "null".
fn is_null_schema(m: &Map<String, Value>) -> bool {
    m.get("type").and_then(Value::as_str) == Some("null")
        && m.keys()
            .all(|k| matches!(k.as_str(), "type" | "description" | "title" | "nullable"))
}

/// Puts every schema object's keys in [`KEY_ORDER`] (recursively).
fn reorder(v: Value) -> Value {
    let Value::Object(mut map) = v else { return v };
    let mut out = Map::new();
    for key in KEY_ORDER {
        if let Some(value) = map.remove(key) {
            let value = match key {
                "items" => reorder(value),
                "properties" => match value {
                    Value::Object(props) => {
                        Value::Object(props.into_iter().map(|(k, v)| (k, reorder(v))).collect())
                    }
                    other => other,
                },
                "anyOf" => match value {
                    Value::Array(items) => Value::Array(items.into_iter().map(reorder).collect()),
                    other => other,
                },
                _ => value,
            };
            out.insert(key.to_owned(), value);
        }
    }
    out.extend(map);
    Value::Object(out)
}

struct Lowerer<'a> {
    root: &'a Value,
    root_path: &'a str,
    /// References being inlined right now, outermost first (a repeat is a cycle).
    expanding: Vec<String>,
    depth: usize,
    nodes: usize,
}

type Lowered = Option<Map<String, Value>>;

/// A followed `$ref`: its pointer, the schema it points to, and that schema's path.
type Followed = (String, Map<String, Value>, String);

/// An `allOf` branch with its `$ref`s followed, and the references it went through.
type ResolvedBranch = (Map<String, Value>, Vec<String>);

impl Lowerer<'_> {
    /// Lowers one schema node; `None` is the schema `false` (nothing allowed).
    fn lower(&mut self, node: &Value, path: &str) -> Result<Lowered> {
        self.depth += 1;
        let result = self.lower_node(node, path);
        self.depth -= 1;
        result
    }

    fn lower_node(&mut self, node: &Value, path: &str) -> Result<Lowered> {
        if self.depth > MAX_DEPTH {
            return Err(Error::input(
                path,
                format!(
                    "the schema nests deeper than {MAX_DEPTH} levels once its $refs are inlined"
                ),
            ));
        }
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(Error::input(
                path,
                format!(
                    "the schema grows past {MAX_NODES} nodes once its $refs are inlined \
                     ({JSON_SCHEMA_HINT})"
                ),
            ));
        }
        let map = match node {
            Value::Bool(true) => return Ok(Some(any_schema(&Map::new(), false))),
            Value::Bool(false) => return Ok(None),
            Value::Object(map) => map,
            other => {
                return Err(Error::input(
                    path,
                    format!(
                        "a schema must be an object or a boolean, got {}",
                        json_kind(other)
                    ),
                ));
            }
        };
        if let Some(reference) = map.get("$ref") {
            return self.lower_ref(map, reference, path);
        }
        if let Some(all) = map.get("allOf") {
            return self.lower_all_of(map, all, path);
        }
        if map.contains_key("anyOf") || map.contains_key("oneOf") {
            return self.lower_any_of(map, path);
        }
        if let Some(Value::Array(types)) = map.get("type") {
            return self.lower_type_list(map, types, path);
        }
        self.lower_plain(map, path)
    }

    /// Finds the target of a `$ref` inside the document, with the path of that target.
    fn resolve(&self, pointer: &str, path: &str) -> Result<(&Value, String)> {
        let Some(fragment) = pointer.strip_prefix('#') else {
            return Err(Error::input(
                path,
                format!(
                    "$ref {pointer:?} points outside this schema; only references into the \
                     same document (#/...) can be inlined"
                ),
            ));
        };
        if !fragment.is_empty() && !fragment.starts_with('/') {
            return Err(Error::input(
                path,
                format!("$ref {pointer:?} is an anchor; only JSON pointers (#/...) can be inlined"),
            ));
        }
        let mut target = self.root;
        let mut target_path = self.root_path.to_owned();
        for raw in fragment.split('/').skip(1) {
            let segment = percent_decode(raw).replace("~1", "/").replace("~0", "~");
            let next = match target {
                Value::Object(m) => m.get(&segment),
                Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
                _ => None,
            };
            let Some(next) = next else {
                return Err(Error::input(
                    path,
                    format!("$ref {pointer:?} points to nothing in this schema"),
                ));
            };
            target_path = if target.is_array() {
                format!("{target_path}[{segment}]")
            } else {
                key_path(&target_path, &segment)
            };
            target = next;
        }
        Ok((target, target_path))
    }

    fn cycle_error(&self, pointer: &str, path: &str) -> Error {
        let name = pointer.rsplit('/').next().unwrap_or(pointer);
        let start = self
            .expanding
            .iter()
            .position(|p| p == pointer)
            .unwrap_or(0);
        let mut chain: Vec<&str> = self.expanding[start..].iter().map(String::as_str).collect();
        chain.push(pointer);
        Error::input(
            path,
            format!(
                "cyclic $ref: definition {name:?} refers back to itself ({}); Gemini's \
                 `parameters` cannot express a recursive schema ({JSON_SCHEMA_HINT})",
                chain.join(" -> ")
            ),
        )
    }

    /// Resolves one `$ref` found at `path`: the pointer, a copy of the schema it points to and
    /// that schema's own path. `None`: it points to `false`. A reference back into `expanding`
    /// or `through` is a cycle.
    fn follow_ref(
        &self,
        reference: &Value,
        path: &str,
        through: &[String],
    ) -> Result<Option<Followed>> {
        let ref_path = key_path(path, "$ref");
        let Some(pointer) = reference.as_str() else {
            return Err(Error::input(ref_path, "$ref must be a string"));
        };
        if self.expanding.iter().chain(through).any(|p| p == pointer) {
            return Err(self.cycle_error(pointer, &ref_path));
        }
        let (target, target_path) = self.resolve(pointer, &ref_path)?;
        let schema = match target {
            Value::Object(m) => m.clone(),
            Value::Bool(true) => Map::new(),
            Value::Bool(false) => return Ok(None),
            other => {
                return Err(Error::input(
                    ref_path,
                    format!(
                        "$ref {pointer:?} points to a {}, not a schema",
                        json_kind(other)
                    ),
                ));
            }
        };
        Ok(Some((pointer.to_owned(), schema, target_path)))
    }

    fn lower_ref(
        &mut self,
        map: &Map<String, Value>,
        reference: &Value,
        path: &str,
    ) -> Result<Lowered> {
        let Some((pointer, mut merged, target_path)) = self.follow_ref(reference, path, &[])?
        else {
            return Ok(None);
        };
        for (k, v) in map {
            if k != "$ref" {
                merged.insert(k.clone(), v.clone());
            }
        }
        // Errors inside the definition point at the definition itself.
        let inner_path = if map.len() > 1 { path } else { &target_path };
        self.expanding.push(pointer);
        let result = self.lower(&Value::Object(merged), inner_path);
        self.expanding.pop();
        result
    }

    /// Follows `$ref`s of an `allOf` branch to a plain schema; returns the schema and the
    /// references it went through. `None`: the branch is `false`.
    fn resolve_branch(&self, branch: &Value, path: &str) -> Result<Option<ResolvedBranch>> {
        let mut current = match branch {
            Value::Object(m) => m.clone(),
            Value::Bool(true) => return Ok(Some((Map::new(), Vec::new()))),
            Value::Bool(false) => return Ok(None),
            other => {
                return Err(Error::input(
                    path,
                    format!(
                        "a schema must be an object or a boolean, got {}",
                        json_kind(other)
                    ),
                ));
            }
        };
        let mut through: Vec<String> = Vec::new();
        while let Some(reference) = current.remove("$ref") {
            let Some((pointer, mut merged, _)) = self.follow_ref(&reference, path, &through)?
            else {
                return Ok(None);
            };
            merged.extend(current);
            current = merged;
            through.push(pointer);
        }
        Ok(Some((current, through)))
    }

    fn lower_all_of(
        &mut self,
        map: &Map<String, Value>,
        all: &Value,
        path: &str,
    ) -> Result<Lowered> {
        let all_path = key_path(path, "allOf");
        let Some(branches) = all.as_array() else {
            return Err(Error::input(all_path, "allOf must be an array of schemas"));
        };
        let mut merged = map.clone();
        merged.remove("allOf");
        let mut through = Vec::new();
        for (i, branch) in branches.iter().enumerate() {
            let branch_path = format!("{all_path}[{i}]");
            let Some((branch, refs)) = self.resolve_branch(branch, &branch_path)? else {
                return Ok(None);
            };
            merged = merge(merged, branch, &branch_path)?;
            through.extend(refs);
        }
        let pushed = through.len();
        self.expanding.extend(through);
        let result = self.lower(&Value::Object(merged), path);
        self.expanding.truncate(self.expanding.len() - pushed);
        result
    }

    fn lower_any_of(&mut self, map: &Map<String, Value>, path: &str) -> Result<Lowered> {
        let (key, union) = match (map.get("anyOf"), map.get("oneOf")) {
            (Some(_), Some(_)) => {
                return Err(Error::input(
                    path,
                    "a schema with both anyOf and oneOf cannot be expressed as one Gemini union",
                ));
            }
            (Some(u), None) => ("anyOf", u),
            (None, Some(u)) => ("oneOf", u),
            (None, None) => return self.lower_plain(map, path),
        };
        let union_path = key_path(path, key);
        let branches = match union.as_array() {
            Some(b) if !b.is_empty() => b,
            _ => {
                return Err(Error::input(
                    union_path,
                    format!("{key} must be a non-empty array of schemas"),
                ));
            }
        };
        let annotations = annotations_of(map);
        let mut nullable = map.get("nullable") == Some(&Value::Bool(true));
        let constraints: Map<String, Value> = map
            .iter()
            .filter(|(k, _)| {
                !matches!(
                    k.as_str(),
                    "anyOf"
                        | "oneOf"
                        | "description"
                        | "title"
                        | "nullable"
                        | "default"
                        | "example"
                        | "examples"
                        | "$schema"
                        | "$id"
                        | "$comment"
                        | "$defs"
                        | "definitions"
                )
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut lowered: Vec<Map<String, Value>> = Vec::new();
        let sibling_type = constraints.get("type").and_then(Value::as_str);
        for (i, branch) in branches.iter().enumerate() {
            let branch_path = format!("{union_path}[{i}]");
            if is_raw_null(branch) {
                nullable = true;
                continue;
            }
            let branch_type = branch.get("type").and_then(Value::as_str);
            if let (Some(outer), Some(inner)) = (sibling_type, branch_type)
                && !types_meet(outer, inner)
            {
                // `{"type": "string", "anyOf": [.., {"type": "integer"}]}`: that branch can
                // never match.
                continue;
            }
            let branch = if constraints.is_empty() {
                branch.clone()
            } else {
                json!({"allOf": [Value::Object(constraints.clone()), branch]})
            };
            let Some(mut m) = self.lower(&branch, &branch_path)? else {
                continue;
            };
            if is_null_schema(&m) {
                nullable = true;
                continue;
            }
            if m.remove("nullable") == Some(Value::Bool(true)) {
                nullable = true;
            }
            match m.remove("anyOf") {
                // A nested union flattens into this one (its annotations are already copied
                // into its branches).
                Some(Value::Array(inner)) => {
                    for b in inner {
                        if let Value::Object(mut b) = b {
                            if b.remove("nullable") == Some(Value::Bool(true)) {
                                nullable = true;
                            }
                            lowered.push(b);
                        }
                    }
                }
                Some(other) => {
                    m.insert("anyOf".into(), other);
                    lowered.push(m);
                }
                None => lowered.push(m),
            }
        }
        match lowered.len() {
            0 if nullable => {
                let mut m = annotations;
                m.insert("type".into(), json!("null"));
                Ok(Some(m))
            }
            0 => Err(Error::input(
                union_path,
                format!("{key} has no branch Gemini can express"),
            )),
            1 => {
                let mut only = lowered.remove(0);
                annotate(&mut only, &annotations, nullable);
                // One branch left: the union's default/example can sit next to it again.
                for key in ["default", "example"] {
                    if let Some(v) = map.get(key).filter(|v| !v.is_null())
                        && !only.contains_key(key)
                    {
                        only.insert(key.to_owned(), v.clone());
                    }
                }
                Ok(Some(only))
            }
            _ => {
                for b in &mut lowered {
                    annotate(b, &annotations, nullable);
                }
                let mut out = Map::new();
                out.insert(
                    "anyOf".into(),
                    Value::Array(lowered.into_iter().map(Value::Object).collect()),
                );
                Ok(Some(out))
            }
        }
    }

    fn lower_type_list(
        &mut self,
        map: &Map<String, Value>,
        types: &[Value],
        path: &str,
    ) -> Result<Lowered> {
        let mut names: Vec<String> = Vec::new();
        for (i, t) in types.iter().enumerate() {
            let Some(name) = t.as_str() else {
                return Err(Error::input(
                    format!("{}[{i}]", key_path(path, "type")),
                    format!("a type name must be a string, got {}", json_kind(t)),
                ));
            };
            let name = name.to_ascii_lowercase();
            if !names.contains(&name) {
                names.push(name);
            }
        }
        let has_null = names.iter().any(|n| n == "null");
        let others: Vec<&String> = names.iter().filter(|n| *n != "null").collect();
        match others.as_slice() {
            [] => {
                let mut m = map.clone();
                m.insert("type".into(), json!("null"));
                self.lower_plain(&m, path)
            }
            [one] => {
                let mut m = map.clone();
                m.insert("type".into(), json!(one));
                if has_null {
                    m.insert("nullable".into(), Value::Bool(true));
                }
                self.lower_plain(&m, path)
            }
            many => {
                let mut branches: Vec<Value> = many
                    .iter()
                    .map(|t| Value::Object(split_for_type(map, t)))
                    .collect();
                if has_null {
                    branches.push(json!({"type": "null"}));
                }
                let mut union = annotations_of(map);
                union.insert("anyOf".into(), Value::Array(branches));
                self.lower_any_of(&union, path)
            }
        }
    }

    fn lower_plain(&mut self, map: &Map<String, Value>, path: &str) -> Result<Lowered> {
        let annotations = annotations_of(map);
        let mut nullable = map.get("nullable") == Some(&Value::Bool(true));

        // enum / const
        let enum_path = key_path(
            path,
            if map.contains_key("const") {
                "const"
            } else {
                "enum"
            },
        );
        let mut values: Option<Vec<Value>> = match (map.get("const"), map.get("enum")) {
            (Some(c), _) => Some(vec![c.clone()]),
            (None, Some(Value::Array(values))) => Some(values.clone()),
            (None, Some(other)) => {
                return Err(Error::input(
                    enum_path,
                    format!("enum must be an array, got {}", json_kind(other)),
                ));
            }
            (None, None) => None,
        };
        let mut enum_kind: Option<&'static str> = None;
        if let Some(vals) = &mut values {
            if vals.iter().any(Value::is_null) {
                nullable = true;
                vals.retain(|v| !v.is_null());
            }
            // Gemini rejects empty enum members ("enum[3]: cannot be empty").
            vals.retain(|v| v.as_str() != Some(""));
            if let Some(bad) = vals.iter().find(|v| v.is_object() || v.is_array()) {
                return Err(Error::input(
                    enum_path,
                    format!(
                        "enum value {bad} cannot be expressed: Gemini enums hold strings, \
                         numbers or booleans"
                    ),
                ));
            }
            let mut kinds: Vec<&'static str> = Vec::new();
            for v in vals.iter() {
                let k = value_kind(v);
                if !kinds.contains(&k) {
                    kinds.push(k);
                }
            }
            if kinds.contains(&"integer") && kinds.contains(&"number") {
                kinds.retain(|k| *k != "integer");
            }
            if kinds.len() > 1 {
                return self.split_enum(map, vals, &kinds, nullable, path);
            }
            enum_kind = kinds.first().copied();
        }

        // type
        let declared = match map.get("type") {
            None => None,
            Some(Value::String(t)) => {
                let t = t.to_ascii_lowercase();
                if !matches!(
                    t.as_str(),
                    "string" | "number" | "integer" | "boolean" | "array" | "object" | "null"
                ) {
                    return Err(Error::input(
                        key_path(path, "type"),
                        format!("unknown type {t:?}"),
                    ));
                }
                Some(t)
            }
            Some(other) => {
                return Err(Error::input(
                    key_path(path, "type"),
                    format!(
                        "type must be a string or an array, got {}",
                        json_kind(other)
                    ),
                ));
            }
        };
        let has = |keys: &[&str]| keys.iter().any(|k| map.contains_key(*k));
        let ty: String = match (declared, enum_kind) {
            (Some(t), _) => t,
            (None, Some(k)) => k.to_owned(),
            (None, None) if has(&OBJECT_KEYS) => "object".into(),
            (None, None) if has(&ARRAY_KEYS) => "array".into(),
            (None, None) if has(&STRING_KEYS) => "string".into(),
            (None, None) if has(&NUMBER_KEYS) => "number".into(),
            (None, None) => return Ok(Some(any_schema(&annotations, nullable))),
        };

        let mut out = Map::new();
        out.insert("type".into(), json!(ty));

        // format, and enum values as strings (Gemini enums are string lists; a non-string
        // enum keeps its JSON type and says `format: "enum"`, as in Gemini's own example
        // `{type: INTEGER, format: enum, enum: ["101", "201", "301"]}`).
        let input_format = map.get("format").and_then(Value::as_str);
        let mut enum_strings: Option<Vec<Value>> = None;
        if let Some(vals) = values.filter(|v| !v.is_empty()) {
            enum_strings = Some(
                vals.into_iter()
                    .map(|v| match v {
                        Value::String(s) => Value::String(s),
                        other => Value::String(other.to_string()),
                    })
                    .collect(),
            );
            if ty != "string" || input_format == Some("enum") {
                out.insert("format".into(), json!("enum"));
            }
        } else if let Some(format) = input_format {
            let keep = match ty.as_str() {
                "string" => matches!(format, "enum" | "date-time"),
                "integer" => matches!(format, "int32" | "int64"),
                "number" => matches!(format, "float" | "double"),
                _ => false,
            };
            if keep {
                out.insert("format".into(), json!(format));
            }
        }
        for (k, v) in &annotations {
            out.insert(k.clone(), v.clone());
        }
        if nullable {
            out.insert("nullable".into(), Value::Bool(true));
        }
        if let Some(strings) = enum_strings {
            out.insert("enum".into(), Value::Array(strings));
        }
        if let Some(d) = map.get("default").filter(|d| !d.is_null()) {
            out.insert("default".into(), d.clone());
        }
        if let Some(e) = map.get("example").or_else(|| {
            map.get("examples")
                .and_then(Value::as_array)
                .and_then(|e| e.first())
        }) {
            out.insert("example".into(), e.clone());
        }

        match ty.as_str() {
            "object" => self.lower_object(map, &mut out, path)?,
            "array" => self.lower_array(map, &mut out, path)?,
            "string" => copy_counts(map, &mut out, &["minLength", "maxLength"], path)?,
            "number" | "integer" => {
                for (bound, exclusive) in [
                    ("minimum", "exclusiveMinimum"),
                    ("maximum", "exclusiveMaximum"),
                ] {
                    let value = map
                        .get(bound)
                        .filter(|v| v.is_number())
                        .or_else(|| map.get(exclusive).filter(|v| v.is_number()));
                    if let Some(v) = value {
                        out.insert(bound.into(), v.clone());
                    }
                }
            }
            _ => {}
        }
        if ty == "string"
            && let Some(p) = map.get("pattern").filter(|p| p.is_string())
        {
            out.insert("pattern".into(), p.clone());
        }
        Ok(Some(out))
    }

    /// An enum mixing kinds (`["auto", 1]`): one enum per kind, as a union.
    fn split_enum(
        &mut self,
        map: &Map<String, Value>,
        vals: &[Value],
        kinds: &[&str],
        nullable: bool,
        path: &str,
    ) -> Result<Lowered> {
        let mut branches: Vec<Value> = kinds
            .iter()
            .map(|kind| {
                let of_kind: Vec<Value> = vals
                    .iter()
                    .filter(|v| {
                        let k = value_kind(v);
                        k == *kind || (*kind == "number" && k == "integer")
                    })
                    .cloned()
                    .collect();
                json!({"type": kind, "enum": of_kind})
            })
            .collect();
        if nullable {
            branches.push(json!({"type": "null"}));
        }
        let mut union = annotations_of(map);
        union.insert("anyOf".into(), Value::Array(branches));
        self.lower_any_of(&union, path)
    }

    fn lower_object(
        &mut self,
        map: &Map<String, Value>,
        out: &mut Map<String, Value>,
        path: &str,
    ) -> Result<()> {
        let props_path = key_path(path, "properties");
        let mut properties = Map::new();
        match map.get("properties") {
            None => {}
            Some(Value::Object(props)) => {
                for (name, schema) in props {
                    if let Some(lowered) = self.lower(schema, &key_path(&props_path, name))? {
                        properties.insert(name.clone(), Value::Object(lowered));
                    }
                }
            }
            Some(other) => {
                return Err(Error::input(
                    props_path,
                    format!("properties must be an object, got {}", json_kind(other)),
                ));
            }
        }
        if properties.is_empty() {
            // Nested object without named properties: a plain object (Gemini rejects an
            // empty `properties`).
            return Ok(());
        }
        let required: Vec<Value> = match map.get("required") {
            None => Vec::new(),
            Some(Value::Array(names)) => {
                let mut seen: Vec<&str> = Vec::new();
                for n in names.iter().filter_map(Value::as_str) {
                    if properties.contains_key(n) && !seen.contains(&n) {
                        seen.push(n);
                    }
                }
                seen.into_iter().map(|n| json!(n)).collect()
            }
            Some(other) => {
                return Err(Error::input(
                    key_path(path, "required"),
                    format!(
                        "required must be an array of names, got {}",
                        json_kind(other)
                    ),
                ));
            }
        };
        let ordering: Option<Vec<Value>> = map
            .get("propertyOrdering")
            .and_then(Value::as_array)
            .map(|names| {
                names
                    .iter()
                    .filter(|n| n.as_str().is_some_and(|n| properties.contains_key(n)))
                    .cloned()
                    .collect()
            });
        out.insert("properties".into(), Value::Object(properties));
        if !required.is_empty() {
            out.insert("required".into(), Value::Array(required));
        }
        if let Some(ordering) = ordering.filter(|o| !o.is_empty()) {
            out.insert("propertyOrdering".into(), Value::Array(ordering));
        }
        copy_counts(map, out, &["minProperties", "maxProperties"], path)
    }

    fn lower_array(
        &mut self,
        map: &Map<String, Value>,
        out: &mut Map<String, Value>,
        path: &str,
    ) -> Result<()> {
        let tuple = match (map.get("prefixItems"), map.get("items")) {
            (Some(Value::Array(t)), _) => Some(("prefixItems", t)),
            (None, Some(Value::Array(t))) => Some(("items", t)),
            _ => None,
        };
        let items = if let Some((key, tuple)) = tuple {
            // A tuple: any of its item schemas, with its length as bounds.
            if tuple.is_empty() {
                any_schema(&Map::new(), false)
            } else {
                if !map.contains_key("minItems") {
                    out.insert("minItems".into(), json!(tuple.len()));
                }
                if !map.contains_key("maxItems") {
                    out.insert("maxItems".into(), json!(tuple.len()));
                }
                let union = json!({"anyOf": tuple});
                self.lower(&union, &key_path(path, key))?
                    .unwrap_or_else(|| any_schema(&Map::new(), false))
            }
        } else {
            match map.get("items") {
                None => any_schema(&Map::new(), false),
                Some(items) => self
                    .lower(items, &key_path(path, "items"))?
                    .unwrap_or_else(|| any_schema(&Map::new(), false)),
            }
        };
        out.insert("items".into(), Value::Object(items));
        copy_counts(map, out, &["minItems", "maxItems"], path)
    }
}

/// Copies non-negative integer keywords (`minItems`, …) that the output does not have yet.
fn copy_counts(
    map: &Map<String, Value>,
    out: &mut Map<String, Value>,
    keys: &[&str],
    path: &str,
) -> Result<()> {
    for key in keys {
        match map.get(*key) {
            None => {}
            Some(v) if v.as_u64().is_some() => {
                out.insert((*key).to_owned(), v.clone());
            }
            Some(v) => {
                return Err(Error::input(
                    key_path(path, key),
                    format!("{key} must be a non-negative integer, got {v}"),
                ));
            }
        }
    }
    Ok(())
}

/// The keywords of `map` that apply to values of type `ty`, for one branch of a type list.
fn split_for_type(map: &Map<String, Value>, ty: &str) -> Map<String, Value> {
    let own: &[&str] = match ty {
        "object" => &OBJECT_KEYS,
        "array" => &ARRAY_KEYS,
        "string" => &["minLength", "maxLength", "pattern", "format"],
        "number" | "integer" => &[
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "multipleOf",
            "format",
        ],
        _ => &[],
    };
    let matches = |v: &Value| {
        let k = value_kind(v);
        k == ty || (ty == "number" && k == "integer")
    };
    let mut out = Map::new();
    out.insert("type".into(), json!(ty));
    for key in own {
        if let Some(v) = map.get(*key) {
            out.insert((*key).to_owned(), v.clone());
        }
    }
    if let Some(Value::Array(values)) = map.get("enum") {
        let of_type: Vec<Value> = values.iter().filter(|v| matches(v)).cloned().collect();
        if !of_type.is_empty() {
            out.insert("enum".into(), Value::Array(of_type));
        }
    }
    if let Some(c) = map.get("const").filter(|c| matches(c)) {
        out.insert("const".into(), c.clone());
    }
    out
}

/// Merges `b` into `a` for `allOf`: properties and `required` united, types intersected,
/// enums intersected, other keys kept from `a` first.
fn merge(
    mut a: Map<String, Value>,
    b: Map<String, Value>,
    path: &str,
) -> Result<Map<String, Value>> {
    for (key, vb) in b {
        let Some(va) = a.get_mut(&key) else {
            a.insert(key, vb);
            continue;
        };
        match key.as_str() {
            "properties" => {
                if let (Value::Object(pa), Value::Object(pb)) = (va, vb) {
                    for (name, sb) in pb {
                        match pa.get_mut(&name) {
                            Some(sa) => {
                                let both = json!({"allOf": [sa.take(), sb]});
                                *sa = both;
                            }
                            None => {
                                pa.insert(name, sb);
                            }
                        }
                    }
                }
            }
            "required" => {
                if let (Value::Array(ra), Value::Array(rb)) = (va, vb) {
                    for name in rb {
                        if !ra.contains(&name) {
                            ra.push(name);
                        }
                    }
                }
            }
            "type" if *va != vb => match (va.as_str(), vb.as_str()) {
                (Some("integer"), Some("number")) => {}
                (Some("number"), Some("integer")) => *va = vb,
                _ => {
                    return Err(Error::input(
                        path,
                        format!("allOf combines type {va} with type {vb}; no value has both"),
                    ));
                }
            },
            "enum" => {
                if let (Value::Array(ea), Value::Array(eb)) = (va, vb) {
                    ea.retain(|v| eb.contains(v));
                    if ea.is_empty() {
                        return Err(Error::input(
                            path,
                            "allOf combines enums with no value in common",
                        ));
                    }
                }
            }
            "allOf" => {
                if let (Value::Array(aa), Value::Array(ab)) = (va, vb) {
                    aa.extend(ab);
                }
            }
            "anyOf" | "oneOf" => {
                return Err(Error::input(
                    path,
                    format!(
                        "allOf combines two unions ({key}); Gemini cannot express their \
                         intersection ({JSON_SCHEMA_HINT})"
                    ),
                ));
            }
            _ => {}
        }
    }
    Ok(a)
}

/// Decodes `%XX` escapes in a JSON-pointer segment taken from a URI fragment.
fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_owned();
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lower(schema: Value) -> Value {
        to_gemini(&schema, "parameters")
            .unwrap()
            .unwrap_or(Value::Null)
    }

    fn lower_err(schema: Value) -> (String, String) {
        match to_gemini(&schema, "tools[2].parameters").unwrap_err() {
            Error::Input { path, message } => (path, message),
            other => panic!("not an input error: {other}"),
        }
    }

    #[test]
    fn strips_what_gemini_rejects() {
        let out = lower(json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
                "n": {"type": "integer", "multipleOf": 2, "exclusiveMinimum": 0},
                "when": {"type": "string", "format": "date-time"},
                "mail": {"type": "string", "format": "email", "pattern": "^.+@.+$"},
                "owner": {"type": "string", "x-mcp-header": "owner"}
            },
            "required": ["tags", "ghost"]
        }));
        assert_eq!(
            out,
            json!({
                "type": "object",
                "properties": {
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "n": {"type": "integer", "minimum": 0},
                    "when": {"type": "string", "format": "date-time"},
                    "mail": {"type": "string", "pattern": "^.+@.+$"},
                    "owner": {"type": "string"}
                },
                "required": ["tags"]
            })
        );
    }

    #[test]
    fn refs_inline_and_cycles_name_the_definition() {
        let out = lower(json!({
            "type": "object",
            "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}}},
            "properties": {"at": {"$ref": "#/$defs/Point", "description": "where"}}
        }));
        assert_eq!(
            out["properties"]["at"],
            json!({"type": "object", "description": "where", "properties": {"x": {"type": "number"}}})
        );
        let (path, message) = lower_err(json!({
            "type": "object",
            "definitions": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/definitions/Node"}}}},
            "properties": {"items": {"$ref": "#/definitions/Node"}}
        }));
        assert_eq!(
            path,
            "tools[2].parameters.definitions.Node.properties.next.$ref"
        );
        assert!(message.contains("\"Node\""), "{message}");
        assert!(message.contains("cyclic"), "{message}");
    }

    #[test]
    fn type_lists_enums_and_unions() {
        let out = lower(json!({
            "type": "object",
            "properties": {
                "a": {"type": ["string", "null"]},
                "b": {"type": ["string", "integer"], "maxLength": 3, "minimum": 1},
                "c": {"enum": [1, 2, null]},
                "d": {"const": "fixed"},
                "e": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "maybe"},
                "f": {"enum": ["", "x"]}
            }
        }));
        let p = &out["properties"];
        assert_eq!(p["a"], json!({"type": "string", "nullable": true}));
        assert_eq!(
            p["b"],
            json!({"anyOf": [{"type": "string", "maxLength": 3}, {"type": "integer", "minimum": 1}]})
        );
        assert_eq!(
            p["c"],
            json!({"type": "integer", "format": "enum", "nullable": true, "enum": ["1", "2"]})
        );
        assert_eq!(p["d"], json!({"type": "string", "enum": ["fixed"]}));
        assert_eq!(
            p["e"],
            json!({"type": "string", "description": "maybe", "nullable": true})
        );
        assert_eq!(p["f"], json!({"type": "string", "enum": ["x"]}));
    }

    #[test]
    fn empty_roots_and_free_form_roots() {
        assert_eq!(
            to_gemini(&json!({"type": "object", "properties": {}}), "p").unwrap(),
            None
        );
        assert_eq!(to_gemini(&json!({}), "p").unwrap(), None);
        let (_, message) =
            lower_err(json!({"type": "object", "additionalProperties": {"type": "string"}}));
        assert!(message.contains("free-form"), "{message}");
        let (_, message) = lower_err(
            json!({"anyOf": [{"type": "object", "properties": {"a": {"type": "string"}}}, {"type": "object", "properties": {"b": {"type": "string"}}}]}),
        );
        assert!(message.contains("union"), "{message}");
    }

    #[test]
    fn exponential_refs_are_bounded() {
        let mut defs = Map::new();
        defs.insert("L0".into(), json!({"type": "string"}));
        for i in 1..30 {
            let prev = format!("#/$defs/L{}", i - 1);
            defs.insert(
                format!("L{i}"),
                json!({"type": "object", "properties": {"a": {"$ref": prev}, "b": {"$ref": prev}}}),
            );
        }
        let schema =
            json!({"type": "object", "$defs": defs, "properties": {"x": {"$ref": "#/$defs/L29"}}});
        let (_, message) = lower_err(schema);
        assert!(
            message.contains("nodes") || message.contains("deeper"),
            "{message}"
        );
    }

    #[test]
    fn key_paths_quote_odd_keys() {
        assert_eq!(key_path("p", "a_b"), "p.a_b");
        assert_eq!(key_path("p", "$ref"), "p.$ref");
        assert_eq!(key_path("p", "a.b"), "p[\"a.b\"]");
    }
}
