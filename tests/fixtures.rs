//! Fixture conformance: one test per case folder (named after it), plus a completeness check
//! that fails when a folder has no test, a test has no folder, or a canonical case is neither
//! present nor listed in the provider's `SKIP` file.

use std::path::{Path, PathBuf};

use toolwire::conformance::{self, Mode};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn run(provider: &str, case: &str) {
    let dir = fixtures().join(provider).join(case);
    assert!(dir.is_dir(), "{} is missing", dir.display());
    let report = conformance::run_case(&dir, Mode::Check);
    assert!(
        report.passed(),
        "{provider}/{case} failed:\n{}",
        report.failures().join("\n")
    );
}

/// `cases!(provider: case, ...)` registers one `#[test]` per case folder;
/// `cases!(module = "folder": case, ...)` for a provider whose name is not an identifier.
macro_rules! cases {
    ($provider:ident: $($case:ident),* $(,)?) => {
        mod $provider {
            $(
                #[test]
                fn $case() {
                    super::run(stringify!($provider), stringify!($case));
                }
            )*
            pub(crate) const CASES: &[&str] = &[$(stringify!($case)),*];
        }
    };
    ($module:ident = $folder:literal: $($case:ident),* $(,)?) => {
        mod $module {
            $(
                #[test]
                fn $case() {
                    super::run($folder, stringify!($case));
                }
            )*
            pub(crate) const CASES: &[&str] = &[$(stringify!($case)),*];
        }
    };
}

cases!(openai: error_body, quirk_cached_tokens, quirk_call_without_name, quirk_calls_with_finish_reason, quirk_deepseek_reasoning_echo, quirk_done_without_finish, quirk_empty_arguments, quirk_empty_id_name_type, quirk_eof_without_done, quirk_error_mid_stream, quirk_foreign_stream, quirk_fresh_id_per_fragment, quirk_index_reused_new_id, quirk_index_sparse_start, quirk_interleaved_indexes, quirk_kimi_reasoning_echo, quirk_minimax_reasoning_details_echo, quirk_missing_ids, quirk_missing_index, quirk_native_finish_length, quirk_negative_index, quirk_null_arguments, quirk_openrouter_reasoning_details_echo, quirk_parallel_tool_calls_false, quirk_parsable_prefix, quirk_reasoning_content, quirk_repeated_id_name, quirk_response_format, quirk_schema_strict_keywords, quirk_several_entries_one_chunk, quirk_sse_framing, quirk_tool_calls_object, quirk_tool_calls_object_body, quirk_tool_choice_named, quirk_tool_choice_none, quirk_tool_choice_required, quirk_tool_name_mapped, quirk_tool_result_image, quirk_unshaped_payloads, quirk_usage_only_final_chunk, quirk_user_image_and_pdf, schema_translation, single_call, stream_malformed_args, stream_parallel_calls, stream_single_call, stream_text_then_call, stream_truncated_args, text_calls_auto_glm, text_calls_auto_prose, text_calls_auto_qwen_xml, text_calls_deepseek_malformed, text_calls_deepseek_parallel, text_calls_deepseek_prose, text_calls_deepseek_single, text_calls_deepseek_truncated, text_calls_glm_parallel, text_calls_glm_prose, text_calls_glm_single, text_calls_glm_truncated, text_calls_glm_untyped, text_calls_hermes_malformed, text_calls_hermes_parallel, text_calls_hermes_prose, text_calls_hermes_single, text_calls_hermes_truncated, text_calls_kimi_malformed, text_calls_kimi_parallel, text_calls_kimi_prose, text_calls_kimi_single, text_calls_kimi_truncated, text_calls_llama_malformed, text_calls_llama_parallel, text_calls_llama_prose, text_calls_llama_single, text_calls_llama_truncated, text_calls_mistral_malformed, text_calls_mistral_parallel, text_calls_mistral_prose, text_calls_mistral_single, text_calls_mistral_truncated, text_calls_qwen_xml_parallel, text_calls_qwen_xml_prose, text_calls_qwen_xml_single, text_calls_qwen_xml_truncated, text_calls_qwen_xml_untyped, tool_result_roundtrip, zero_arg_call);
cases!(dashscope: error_body, quirk_cached_tokens, quirk_cumulative_multimodal_text, quirk_cumulative_output, quirk_forced_tool_choice_stop, quirk_foreign_body, quirk_foreign_stream, quirk_multimodal_parallel_calls, quirk_multimodal_tool_result, quirk_replay_malformed_args, quirk_response_format, quirk_result_format_text, quirk_stream_ends_without_finish, quirk_stream_error_after_text, quirk_stream_error_event, quirk_thinking_forced_choice, quirk_tool_result_image, quirk_unknown_fields_and_finish, quirk_user_image_and_pdf, schema_translation, single_call, stream_malformed_args, stream_parallel_calls, stream_single_call, stream_text_then_call, stream_truncated_args, tool_result_roundtrip, zero_arg_call);
cases!(gemini: error_body, error_rate_limited, hosted_code_execution, hosted_echo, quirk_cached_tokens, quirk_error_array, quirk_foreign_stream, quirk_inline_data_answer, quirk_json_schema_mode, quirk_malformed_function_call, quirk_native_ids, quirk_noargs_call, quirk_parallel_one_per_chunk, quirk_partial_args, quirk_ref_in_tool_result, quirk_response_format, quirk_response_format_json_schema, quirk_response_format_with_tools_legacy, quirk_schema_allof, quirk_schema_any_value, quirk_schema_anyof_optional, quirk_schema_anyof_siblings, quirk_schema_array_without_items, quirk_schema_const_in_anyof, quirk_schema_empty_root, quirk_schema_enum_empty_string, quirk_schema_enum_integers, quirk_schema_enum_mixed, quirk_schema_enum_nullable, quirk_schema_error_names_tool, quirk_schema_formats, quirk_schema_free_form_map, quirk_schema_free_form_root, quirk_schema_inferred_object, quirk_schema_json_schema_mode, quirk_schema_mcp_filesystem_edit_file, quirk_schema_mcp_filesystem_list_directory_with_sizes, quirk_schema_mcp_filesystem_read_multiple_files, quirk_schema_mcp_filesystem_read_text_file, quirk_schema_mcp_github_create_pull_request, quirk_schema_mcp_github_create_repository_ruleset, quirk_schema_mcp_github_list_issues, quirk_schema_mcp_github_push_files, quirk_schema_mcp_github_ruleset_output, quirk_schema_mcp_playwright_browser_click, quirk_schema_mcp_playwright_browser_fill_form, quirk_schema_mcp_playwright_browser_tabs, quirk_schema_mcp_playwright_browser_take_screenshot, quirk_schema_nested_empty_object, quirk_schema_oneof, quirk_schema_ref_cycle, quirk_schema_ref_definitions_pointer, quirk_schema_ref_defs, quirk_schema_ref_external, quirk_schema_required_undefined, quirk_schema_tuple, quirk_schema_type_list_nullable, quirk_schema_type_list_union, quirk_schema_unsupported_keywords, quirk_stream_json_array, quirk_thought_parts, quirk_thought_signature_roundtrip, quirk_tool_name_mapping, quirk_tool_result_audio_refused, quirk_tool_result_image, quirk_tool_result_image_legacy, quirk_turn_rule_error, quirk_user_image_and_pdf, schema_translation, single_call, stream_hosted_grounding, stream_malformed_args, stream_parallel_calls, stream_single_call, stream_text_then_call, stream_truncated_args, tool_result_roundtrip, zero_arg_call);
cases!(glm: error_body, quirk_arguments_object, quirk_cached_tokens, quirk_error_code_number, quirk_finish_context_window, quirk_finish_network_error, quirk_finish_sensitive, quirk_index_minus_one_two_calls, quirk_response_format, quirk_thinking_disabled, quirk_tool_choice_required, quirk_tool_result_image, quirk_tool_stream_override, quirk_user_image_and_pdf, quirk_whole_call_repeated_finish, schema_translation, single_call, stream_malformed_args, stream_parallel_calls, stream_single_call, stream_text_then_call, stream_truncated_args, tool_result_roundtrip, zero_arg_call);
cases!(qwen: error_body, quirk_cached_tokens, quirk_data_inspection_failed, quirk_enable_search_with_tools, quirk_id_repeated, quirk_parallel_off, quirk_replay_malformed_history, quirk_response_format, quirk_sse_error_body, quirk_thinking_model_named_choice, quirk_thinking_reasoning, quirk_thinking_tool_choice_required, quirk_tool_result_image, quirk_user_image_and_pdf, schema_translation, single_call, stream_malformed_args, stream_parallel_calls, stream_single_call, stream_text_then_call, stream_truncated_args, tool_result_roundtrip, zero_arg_call);
cases!(anthropic: error_body, hosted_echo, hosted_web_search, quirk_audio_refused, quirk_cached_tokens, quirk_empty_partial_json, quirk_error_after_text, quirk_foreign_body, quirk_foreign_ids, quirk_max_tokens_open_block, quirk_pause_turn, quirk_prepopulated_message_start, quirk_programmatic_caller, quirk_redacted_thinking, quirk_refusal, quirk_response_format, quirk_stop_sequence, quirk_thinking_blocks, quirk_thinking_forced_choice, quirk_thinking_roundtrip, quirk_tool_choice_forced, quirk_tool_choice_none, quirk_tool_name_mapped, quirk_tool_result_image, quirk_unknown_event, quirk_user_image_and_pdf, schema_translation, single_call, stream_hosted_web_search, stream_malformed_args, stream_parallel_calls, stream_single_call, stream_text_then_call, stream_truncated_args, tool_result_roundtrip, zero_arg_call);
cases!(ollama: error_body, quirk_arguments_object_order, quirk_calls_with_done, quirk_done_reason_load, quirk_eof_without_done, quirk_error_line, quirk_missing_ids_and_index, quirk_pretty_printed_body, quirk_response_format, quirk_thinking, quirk_tool_choice_none, quirk_tool_choice_required, quirk_tool_result_image, quirk_user_image, quirk_user_image_and_pdf, schema_translation, single_call, stream_parallel_calls, stream_single_call, stream_text_then_call, stream_truncated_args, text_calls_hermes_stream, text_calls_qwen_xml_body, tool_result_roundtrip, zero_arg_call);
cases!(stepfun: quirk_cached_tokens, quirk_missing_ids, quirk_no_index, quirk_one_field_per_chunk, quirk_property_key_rule, quirk_response_format, quirk_tool_choice_auto, quirk_tool_choice_required, quirk_tool_result_image, quirk_user_image_and_pdf, schema_translation, single_call, stream_malformed_args, stream_parallel_calls, stream_single_call, stream_text_then_call, stream_truncated_args, tool_result_roundtrip, zero_arg_call);
cases!(mistral: error_body, quirk_arguments_object, quirk_finish_model_length, quirk_foreign_ids, quirk_thinking_body, quirk_thinking_chunks, quirk_tool_choice_required, schema_translation, single_call, stream_malformed_args, stream_parallel_calls, stream_single_call, stream_text_then_call, tool_result_roundtrip, zero_arg_call);
cases!(cohere: error_body, quirk_citations_stream, quirk_finish_unknown, quirk_meta_usage, quirk_thinking_content, quirk_tool_choice_named, quirk_tool_choice_required, schema_translation, single_call, stream_malformed_args, stream_parallel_calls, stream_single_call, stream_text_then_call, stream_truncated_args, tool_result_roundtrip, zero_arg_call);
cases!(openai_responses = "openai-responses": error_body, hosted_echo, hosted_web_search, quirk_audio_refused, quirk_cached_tokens, quirk_call_id_vs_item_id, quirk_call_without_name, quirk_custom_tool, quirk_error_event_after_output, quirk_format_switch, quirk_incomplete_max_output_tokens, quirk_item_id_rotation, quirk_max_output_tokens_mid_call, quirk_max_output_tokens_mid_call_body, quirk_reasoning_items, quirk_response_format, quirk_tool_choice_named, quirk_tool_result_image, quirk_unknown_event, quirk_user_image_and_pdf, schema_translation, single_call, stream_malformed_args, stream_parallel_calls, stream_single_call, stream_text_then_call, stream_truncated_args, tool_result_roundtrip, zero_arg_call);
cases!(gemini_interactions = "gemini-interactions": error_body, quirk_call_signature, quirk_code_execution_body, quirk_error_event, quirk_foreign_stream, quirk_launch_outputs_body, quirk_previous_interaction_id, quirk_server_tool_steps, quirk_stream_ends_early, quirk_thought_summaries, quirk_tool_choice_named, quirk_tool_result_image, quirk_user_image_and_pdf, schema_translation, single_call, stream_malformed_args, stream_parallel_calls, stream_single_call, stream_text_then_call, stream_truncated_args, tool_result_roundtrip, zero_arg_call);

/// Cases registered one test each (by name, so `cargo test --test fixtures glm::single_call`
/// runs one). The providers themselves are the provider table's
/// (`toolwire::providers::BUILTINS`): a built-in without a `cases!` block has every case folder
/// run by `every_case_of_an_unlisted_builtin_passes`.
const REGISTERED: &[(&str, &[&str])] = &[
    ("openai", openai::CASES),
    ("gemini", gemini::CASES),
    ("glm", glm::CASES),
    ("qwen", qwen::CASES),
    ("stepfun", stepfun::CASES),
    ("dashscope", dashscope::CASES),
    ("openai-responses", openai_responses::CASES),
    ("anthropic", anthropic::CASES),
    ("ollama", ollama::CASES),
    ("mistral", mistral::CASES),
    ("cohere", cohere::CASES),
    ("gemini-interactions", gemini_interactions::CASES),
];

#[test]
fn every_fixture_is_registered() {
    let mut problems = Vec::new();
    let root = fixtures();
    for entry in std::fs::read_dir(&root).expect("fixtures/ exists") {
        let dir = entry.expect("readable fixtures/").path();
        if !dir.is_dir() {
            continue;
        }
        let provider = dir.file_name().unwrap().to_string_lossy().into_owned();
        if provider.parse::<toolwire::realtime::RealtimeKind>().is_ok() {
            continue; // realtime dialects: tests/realtime.rs
        }
        if !builtin_names().contains(&provider.as_str()) {
            problems.push(format!(
                "fixtures/{provider} is not a built-in provider (toolwire::providers::BUILTINS)"
            ));
        }
        let registered = REGISTERED.iter().find(|(p, _)| *p == provider);
        let registered = registered.map(|(_, cases)| *cases);
        for case in std::fs::read_dir(&dir).expect("readable provider folder") {
            let case = case.expect("readable case").path();
            if case.is_dir()
                && let Some(registered) = registered
            {
                let name = case.file_name().unwrap().to_string_lossy().into_owned();
                if !registered.contains(&name.as_str()) {
                    problems.push(format!("{provider}/{name} has no test (add it to cases!)"));
                }
            }
        }
        for case in registered.unwrap_or(&[]) {
            if !dir.join(case).is_dir() {
                problems.push(format!("{provider}/{case} is registered but has no folder"));
            }
        }
        for case in conformance::missing_canonical(&dir) {
            problems.push(format!(
                "{provider}/{case}: canonical case missing and not in {provider}/SKIP"
            ));
        }
    }
    for provider in builtin_names() {
        if !root.join(provider).is_dir() {
            problems.push(format!(
                "fixtures/{provider} is missing (a built-in provider)"
            ));
        }
    }
    for (provider, _) in REGISTERED {
        if !builtin_names().contains(provider) {
            problems.push(format!(
                "{provider} is registered but not a built-in provider"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The provider table's names.
fn builtin_names() -> Vec<&'static str> {
    toolwire::providers::BUILTINS
        .iter()
        .map(toolwire::providers::Builtin::name)
        .collect()
}

/// A built-in with no `cases!` block (a new provider) still has every case folder run.
#[test]
fn every_case_of_an_unlisted_builtin_passes() {
    let mut failures = Vec::new();
    for provider in builtin_names() {
        if REGISTERED.iter().any(|(p, _)| *p == provider) {
            continue;
        }
        let mut cases: Vec<_> = std::fs::read_dir(fixtures().join(provider))
            .unwrap_or_else(|e| panic!("fixtures/{provider}: {e}"))
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .collect();
        cases.sort();
        for dir in cases {
            let report = conformance::run_case(&dir, Mode::Check);
            if !report.passed() {
                failures.push(format!(
                    "{}: {}",
                    dir.display(),
                    report.failures().join("; ")
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Copies one case folder to a fresh temporary folder below `<tmp>/<tag>/<provider>/<case>`.
fn temp_copy(provider: &str, case: &str, tag: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("toolwire-{tag}-{}", std::process::id()));
    let dir = root.join(provider).join(case);
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(fixtures().join(provider).join(case)).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
    dir
}

/// Reverses the key order of every object in `value`.
fn reverse_keys(value: serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => {
            let mut entries: Vec<_> = map.into_iter().collect();
            entries.reverse();
            serde_json::Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, reverse_keys(v)))
                    .collect(),
            )
        }
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.into_iter().map(reverse_keys).collect())
        }
        other => other,
    }
}

/// Goldens are compared as canonical bytes: the same JSON with its keys in another order is a
/// different wire body and fails the case (an unchanged copy passes).
#[test]
fn a_golden_with_reordered_keys_fails() {
    let dir = temp_copy("openai", "single_call", "reorder");
    assert!(conformance::run_case(&dir, Mode::Check).passed());
    let golden = dir.join("wire_request.json");
    let value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&golden).unwrap()).unwrap();
    let reversed = reverse_keys(value.clone());
    assert_eq!(reversed, value, "the same JSON value, keys aside");
    std::fs::write(&golden, conformance::canonical_text(&reversed)).unwrap();
    let report = conformance::run_case(&dir, Mode::Check);
    let failures = report.failures().join("\n");
    assert!(!report.passed(), "a reordered golden passed");
    assert!(failures.contains("key order differs"), "{failures}");

    // Reformatting alone (same keys, same order) fails too: the bytes are the contract.
    std::fs::write(&golden, serde_json::to_string(&value).unwrap()).unwrap();
    let report = conformance::run_case(&dir, Mode::Check);
    assert!(!report.passed(), "a reformatted golden passed");
    assert!(
        report
            .failures()
            .join("\n")
            .contains("not in canonical form"),
        "{:?}",
        report.failures()
    );
    let _ = std::fs::remove_dir_all(dir.parent().unwrap().parent().unwrap());
}
