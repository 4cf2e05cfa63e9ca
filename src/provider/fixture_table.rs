//! The adapters against every real recorded response in `tests/fixtures/real/`.
//!
//! Each row states, from `SOURCES.md` and the file itself, what `parse_reply` must conclude. The
//! walk at the end makes the table exhaustive: a fixture added to a covered folder fails the test
//! until someone either writes its row or says in the skip list why it does not apply.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::provider::{ErrorClass, Parsed, ProviderKind, RawResponse, Usage, parse_reply};

use crate::fixtures::ROOT as FIXTURES;

/// Folders whose every file is accounted for here (Bedrock is out of scope: no such kind).
pub(crate) const COVERED: [&str; 12] = [
    "openai-chat",
    "openai-responses",
    "anthropic",
    "gemini",
    "vertex",
    "azure-openai",
    "openrouter",
    "mistral",
    "groq",
    "together",
    "deepseek",
    "ollama",
];

const STREAM: &str = "stream: modelpin makes non-streaming calls only";
const MODELS_LIST: &str = "models list: belongs to lifecycle work, not to reply parsing";

/// Files deliberately not parsed, with the reason.
const SKIPS: [(&str, &str); 22] = [
    ("openai-chat/models-list-docs-example.json", MODELS_LIST),
    ("openai-chat/stream-gpt-4o-mini-full-headers.sse", STREAM),
    ("openai-chat/stream-gpt-4o-mini-include-usage.sse", STREAM),
    ("openai-responses/stream-gpt-5.5-full-headers.sse", STREAM),
    (
        "anthropic/sdk-fixture-server-side-fallback.sse",
        "stream, and synthetic; its fallback shape is a unit test in anthropic.rs",
    ),
    ("anthropic/stream-claude-opus-4-6-undated.sse", STREAM),
    (
        "anthropic/stream-claude-sonnet-4-5-full-headers.sse",
        STREAM,
    ),
    ("anthropic/stream-retry-after-on-200.sse", STREAM),
    ("anthropic/stream-web-search-server-tool-usage.sse", STREAM),
    ("gemini/models-list.json", MODELS_LIST),
    (
        "gemini/stream-json-array-flash-latest-alias.json",
        "stream (streamGenerateContent without alt=sse: a JSON array of chunks)",
    ),
    ("gemini/stream-sse-gemini-2.5-flash.sse", STREAM),
    ("vertex/stream-sse-flex-tier.sse", STREAM),
    ("openrouter/models-list.json", MODELS_LIST),
    (
        "openrouter/stream-claude-sonnet-4.6-via-bedrock.sse",
        STREAM,
    ),
    (
        "openrouter/stream-in-band-error.sse",
        "stream; the non-streaming in-band error is a unit test in openai.rs",
    ),
    ("mistral/models-list-entry-codestral-2501.json", MODELS_LIST),
    ("mistral/stream-magistral-medium-latest.sse", STREAM),
    ("groq/stream-gpt-oss-120b-x-groq-usage.sse", STREAM),
    ("together/stream-deepseek-r1-via-hf-router.sse", STREAM),
    ("deepseek/models-list-docs-example.json", MODELS_LIST),
    ("deepseek/stream-deepseek-reasoner.sse", STREAM),
];

#[derive(Debug)]
enum Expect {
    Reply {
        model: &'static str,
        upstream: Option<&'static str>,
        usage: Usage,
        cost: Option<f64>,
        fingerprint: Option<&'static str>,
    },
    Rejected {
        class: ErrorClass,
        code: Option<&'static str>,
    },
    Unparseable,
}

#[derive(Debug)]
struct Row {
    file: &'static str,
    kind: ProviderKind,
    /// The status SOURCES.md gives, for files without a `.headers.txt`.
    status: Option<u16>,
    request_id: Option<&'static str>,
    expect: Expect,
}

impl Row {
    fn reply(file: &'static str, kind: ProviderKind, model: &'static str) -> Row {
        let expect = Expect::Reply {
            model,
            upstream: None,
            usage: Usage::default(),
            cost: None,
            fingerprint: None,
        };
        Row::new(file, kind, expect)
    }

    fn rejected(file: &'static str, kind: ProviderKind, class: ErrorClass) -> Row {
        Row::new(file, kind, Expect::Rejected { class, code: None })
    }

    fn unparseable(file: &'static str, kind: ProviderKind) -> Row {
        Row::new(file, kind, Expect::Unparseable)
    }

    fn new(file: &'static str, kind: ProviderKind, expect: Expect) -> Row {
        Row {
            file,
            kind,
            status: None,
            request_id: None,
            expect,
        }
    }

    fn status(mut self, status: u16) -> Row {
        self.status = Some(status);
        self
    }

    fn request_id(mut self, id: &'static str) -> Row {
        self.request_id = Some(id);
        self
    }

    fn usage(
        mut self,
        input: u64,
        output: u64,
        cached: Option<u64>,
        reasoning: Option<u64>,
    ) -> Row {
        if let Expect::Reply { usage, .. } = &mut self.expect {
            *usage = Usage {
                input: Some(input),
                output: Some(output),
                cached_input: cached,
                reasoning,
                implausible: None,
            };
        }
        self
    }

    fn upstream(mut self, name: &'static str) -> Row {
        if let Expect::Reply { upstream, .. } = &mut self.expect {
            *upstream = Some(name);
        }
        self
    }

    fn cost(mut self, usd: f64) -> Row {
        if let Expect::Reply { cost, .. } = &mut self.expect {
            *cost = Some(usd);
        }
        self
    }

    fn fingerprint(mut self, fp: &'static str) -> Row {
        if let Expect::Reply { fingerprint, .. } = &mut self.expect {
            *fingerprint = Some(fp);
        }
        self
    }

    fn code(mut self, provider_code: &'static str) -> Row {
        if let Expect::Rejected { code, .. } = &mut self.expect {
            *code = Some(provider_code);
        }
        self
    }
}

#[allow(clippy::too_many_lines)] // one row per fixture file, by design
fn rows() -> Vec<Row> {
    use ErrorClass::{Auth, InvalidRequest, NotFound, Overloaded, Quota, RateLimited};
    use ProviderKind::{Anthropic, Azure, Gemini, OpenAi, OpenAiCompatible, OpenRouter};
    vec![
        // OpenAI chat completions.
        Row::reply(
            "openai-chat/completion-gpt-4.5-preview.json",
            OpenAi,
            "gpt-4.5-preview-2025-02-27",
        )
        .usage(8, 10, Some(0), Some(0)),
        Row::reply(
            "openai-chat/completion-gpt-4o-alias.json",
            OpenAi,
            "gpt-4o-2024-08-06",
        )
        .usage(14, 7, Some(0), Some(0))
        .fingerprint("fp_a288987b44"),
        Row::reply(
            "openai-chat/completion-gpt-4o-mini-full-headers.json",
            OpenAi,
            "gpt-4o-mini-2024-07-18",
        )
        .usage(146, 3, Some(0), Some(0))
        .fingerprint("fp_0392822090")
        .request_id("req_d157a5a0f4b64776bc387ccab624e664"),
        Row::reply(
            "openai-chat/completion-o1-mini-reasoning.json",
            OpenAi,
            "o1-mini-2024-09-12",
        )
        .usage(30, 212, Some(0), Some(192))
        .fingerprint("fp_79455e3cfb"),
        // A quoted fragment ending in "......": truncated JSON must not pass as a reply.
        Row::unparseable(
            "openai-chat/deprecation-warning-in-body.fragment.txt",
            OpenAi,
        )
        .status(200),
        // An embeddings body is JSON with a model but no answer: not a chat reply.
        Row::unparseable("openai-chat/embeddings-openai-model-header.json", OpenAi),
        Row::rejected(
            "openai-chat/error-400-code-null.json",
            OpenAi,
            InvalidRequest,
        ),
        Row::rejected(
            "openai-chat/error-400-unsupported-value.json",
            OpenAi,
            InvalidRequest,
        )
        .code("unsupported_value"),
        Row::rejected(
            "openai-chat/error-401-invalid-api-key.inner.json",
            OpenAi,
            Auth,
        )
        .status(401)
        .code("invalid_api_key"),
        Row::rejected(
            "openai-chat/error-404-embeddings-model-not-found.json",
            OpenAi,
            NotFound,
        )
        .code("model_not_found"),
        Row::rejected(
            "openai-chat/error-404-model-not-found.json",
            OpenAi,
            NotFound,
        )
        .code("model_not_found"),
        Row::rejected(
            "openai-chat/error-429-rate-limit-exceeded.json",
            OpenAi,
            RateLimited,
        )
        .status(429)
        .code("rate_limit_exceeded"),
        Row::rejected(
            "openai-chat/error-retired-model-text-davinci-003.json",
            OpenAi,
            NotFound,
        )
        .status(404)
        .code("model_not_found"),
        // OpenAI Responses.
        Row::rejected(
            "openai-responses/error-400-invalid-param.json",
            OpenAi,
            InvalidRequest,
        )
        .code("decimal_below_min_value"),
        Row::rejected(
            "openai-responses/error-400-model-not-found.json",
            OpenAi,
            NotFound,
        )
        .code("model_not_found"),
        Row::reply(
            "openai-responses/response-gpt-4o-alias.json",
            OpenAi,
            "gpt-4o-2024-08-06",
        )
        .usage(14, 8, Some(0), Some(0)),
        Row::reply(
            "openai-responses/response-gpt-5.5-full-headers.json",
            OpenAi,
            "gpt-5.5-2026-04-23",
        )
        .usage(11, 5, Some(0), Some(0))
        .request_id("req_c6713bbdac8d4639a5ea09cb6c5eb5a9"),
        Row::reply(
            "openai-responses/response-o3-mini-reasoning.json",
            OpenAi,
            "o3-mini-2025-01-31",
        )
        .usage(88, 547, Some(0), Some(128)),
        // Anthropic.
        Row::rejected(
            "anthropic/error-400-invalid-request.json",
            Anthropic,
            InvalidRequest,
        )
        .request_id("req_011Ca7jT9AHpgXgdv8igm4z9"),
        Row::rejected("anthropic/error-401-authentication.json", Anthropic, Auth)
            .status(401)
            .request_id("req_011CXw8h8A796q3f74Ezmhav"),
        Row::rejected(
            "anthropic/error-404-count-tokens-model-not-found.json",
            Anthropic,
            NotFound,
        )
        .request_id("req_011CVEA3SF7rnb3DuBZytqQa"),
        Row::rejected(
            "anthropic/error-404-model-not-found.json",
            Anthropic,
            NotFound,
        )
        .request_id("req_011CdufXo8Y2LVfY2veyuQWG"),
        Row::rejected(
            "anthropic/error-429-rate-limit.json",
            Anthropic,
            RateLimited,
        )
        .status(429),
        Row::rejected(
            "anthropic/error-529-overloaded-with-request-id.json",
            Anthropic,
            Overloaded,
        )
        .status(529)
        .request_id("req_011CZAau32QzxDkriovTaFCB"),
        Row::rejected("anthropic/error-529-overloaded.json", Anthropic, Overloaded)
            .request_id("req_01RCc7MbLyQNtGKzBTv8VCep"),
        Row::reply(
            "anthropic/message-claude-3-opus-latest-alias.json",
            Anthropic,
            "claude-3-opus-20240229",
        )
        .usage(20, 10, Some(0), None),
        Row::reply(
            "anthropic/message-claude-haiku-4-5-alias.json",
            Anthropic,
            "claude-haiku-4-5-20251001",
        )
        .usage(8, 21, Some(0), None),
        Row::reply(
            "anthropic/message-claude-opus-4-8-thinking-tokens.json",
            Anthropic,
            "claude-opus-4-8",
        )
        .usage(64, 387, Some(0), Some(0)),
        Row::reply(
            "anthropic/message-claude-sonnet-4-0-alias-retry-after.json",
            Anthropic,
            "claude-sonnet-4-20250514",
        )
        .usage(458, 38, Some(0), None),
        // The advisor iteration names claude-opus-4-8, but it is no fallback: fallback_model stays None.
        Row::reply(
            "anthropic/message-usage-iterations-advisor-model.json",
            Anthropic,
            "claude-sonnet-5",
        )
        .usage(2390, 121, Some(0), Some(28)),
        // Gemini API.
        Row::rejected("gemini/error-404-count-tokens.json", Gemini, NotFound).code("NOT_FOUND"),
        Row::rejected("gemini/error-404-model-not-found.json", Gemini, NotFound).code("NOT_FOUND"),
        // Client-formatted text, not JSON: the status alone must still say "gone".
        Row::rejected(
            "gemini/error-404-retired-model-message.txt",
            Gemini,
            NotFound,
        )
        .status(404),
        Row::rejected("gemini/error-429-resource-exhausted.json", Gemini, Quota)
            .status(429)
            .code("RESOURCE_EXHAUSTED"),
        Row::rejected("gemini/error-503-high-demand.json", Gemini, Overloaded)
            .status(503)
            .code("UNAVAILABLE"),
        Row::rejected("gemini/error-503-overloaded.json", Gemini, Overloaded)
            .status(503)
            .code("UNAVAILABLE"),
        Row::reply(
            "gemini/generate-gemini-1.5-flash.json",
            Gemini,
            "gemini-1.5-flash",
        )
        .usage(25, 8, None, None)
        .request_id("UB5DaMfEN7jFnvgPocrJaA"),
        Row::reply(
            "gemini/generate-preview-rerouted-to-ga.json",
            Gemini,
            "gemini-2.5-pro",
        )
        .usage(15, 8, None, Some(275))
        .request_id("1FpeaOWpAs-lkdUP_4eY2QY"),
        // Vertex AI (Gemini body shape).
        Row::rejected(
            "vertex/error-400-invalid-argument.json",
            Gemini,
            InvalidRequest,
        )
        .code("INVALID_ARGUMENT"),
        Row::rejected(
            "vertex/error-404-publisher-model-not-found.txt",
            Gemini,
            NotFound,
        )
        .status(404),
        Row::reply(
            "vertex/generate-gemini-2.0-flash.json",
            Gemini,
            "gemini-2.0-flash",
        )
        .usage(13, 8, None, None)
        .request_id("1VpeaKq4CfH_2PgPh_z--AY"),
        // Azure OpenAI.
        Row::reply(
            "azure-openai/chat-deployment-gpt-4o.json",
            Azure,
            "gpt-4o-2024-11-20",
        )
        .usage(14, 9, Some(0), Some(0))
        .fingerprint("fp_ded0d14823")
        .request_id("1d93fae1-cb8e-4789-8fb6-d26577a3cb77"),
        Row::rejected(
            "azure-openai/error-404-deployment-not-found.json",
            Azure,
            NotFound,
        )
        .status(404)
        .code("DeploymentNotFound"),
        Row::rejected("azure-openai/error-429-rate-limit.json", Azure, RateLimited)
            .code("429")
            .request_id("3d37de60-f6c3-4ced-a637-92bc9d16d8b5"),
        Row::rejected(
            "azure-openai/error-429-token-rate-limit-retry-after-text.json",
            Azure,
            RateLimited,
        )
        .status(429)
        .code("429"),
        Row::reply("azure-openai/responses-v1-gpt-5.4.json", Azure, "gpt-5.4")
            .usage(18, 5, Some(0), Some(0))
            .request_id("e946626e-517f-4a17-982f-0852ada6fe66"),
        // OpenRouter.
        Row::reply(
            "openrouter/completion-claude-sonnet-4.6-cost.json",
            OpenRouter,
            "anthropic/claude-4.6-sonnet-20260217",
        )
        .upstream("Anthropic")
        .usage(3214, 100, Some(0), Some(0))
        .cost(0.013_550_25),
        Row::reply(
            "openrouter/completion-fallback-models-served-grok-4.json",
            OpenRouter,
            "x-ai/grok-4",
        )
        .upstream("xAI")
        .usage(687, 240, Some(682), Some(165))
        .fingerprint("fp_19e21a36c0"),
        Row::reply(
            "openrouter/completion-gemini-2.0-flash-exp-free.json",
            OpenRouter,
            "google/gemini-2.0-flash-exp:free",
        )
        .upstream("Google")
        .usage(8, 17, None, None),
        Row::rejected(
            "openrouter/error-400-not-a-valid-model-id.json",
            OpenRouter,
            NotFound,
        )
        .status(400)
        .code("400"),
        Row::rejected(
            "openrouter/error-429-upstream-rate-limited.json",
            OpenRouter,
            RateLimited,
        )
        .code("429"),
        // Mistral.
        Row::reply(
            "mistral/completion-ministral-8b-latest.json",
            OpenAiCompatible,
            "ministral-8b-latest",
        )
        .usage(28, 6, None, None),
        Row::reply(
            "mistral/completion-mistral-large-latest.json",
            OpenAiCompatible,
            "mistral-large-latest",
        )
        .usage(253, 5, Some(0), None)
        .request_id("019f94fe-29c7-7084-bcf6-386b6baa345e"),
        Row::rejected(
            "mistral/error-400-invalid-model.json",
            OpenAiCompatible,
            NotFound,
        )
        .status(400)
        .code("1500"),
        // Groq.
        Row::reply(
            "groq/completion-compound-beta-renamed.json",
            OpenAiCompatible,
            "groq/compound",
        )
        .usage(5296, 387, None, None)
        // The source cassette replaced ids with "stub"; x_groq.id is still read from the body.
        .request_id("stub"),
        Row::reply(
            "groq/completion-llama-3.3-70b-versatile.json",
            OpenAiCompatible,
            "llama-3.3-70b-versatile",
        )
        .usage(48, 8, None, None)
        .fingerprint("fp_72a5dc99ee")
        .request_id("req_01jr8hj0hzeq9b86xqb5dn7wqs"),
        Row::reply(
            "groq/completion-llama3-8b-8192.json",
            OpenAiCompatible,
            "llama3-8b-8192",
        )
        .usage(35, 25, None, None)
        .fingerprint("fp_179b0f92c9")
        .request_id("req_01jx32wsk4fwf98jtfjm1agphs"),
        Row::rejected(
            "groq/error-400-tool-use-failed.json",
            OpenAiCompatible,
            InvalidRequest,
        )
        .code("tool_use_failed"),
        Row::rejected(
            "groq/error-404-model-not-found.json",
            OpenAiCompatible,
            NotFound,
        )
        .code("model_not_found"),
        Row::rejected(
            "groq/error-429-rate-limit-exceeded.json",
            OpenAiCompatible,
            RateLimited,
        )
        .status(429)
        .code("rate_limit_exceeded"),
        // Together (via the Hugging Face router).
        Row::reply(
            "together/completion-deepseek-r1-via-hf-router.json",
            OpenAiCompatible,
            "deepseek-ai/DeepSeek-R1",
        )
        .usage(4, 197, Some(0), None),
        Row::reply(
            "together/completion-llama-4-scout-weight-version.json",
            OpenAiCompatible,
            "meta-llama/Llama-4-Scout-17B-16E-Instruct",
        )
        .usage(608, 30, None, None),
        // DeepSeek.
        Row::reply(
            "deepseek/completion-deepseek-reasoner-2025.json",
            OpenAiCompatible,
            "deepseek-reasoner",
        )
        .usage(12, 789, Some(0), Some(415))
        .fingerprint("fp_5417b77867_prod0225"),
        Row::reply(
            "deepseek/completion-deepseek-reasoner-served-as-v4-flash.json",
            OpenAiCompatible,
            "deepseek-v4-flash",
        )
        .usage(976, 61, Some(896), Some(25))
        .fingerprint("fp_8b330d02d0_prod0820_fp8_kvcache_20260402"),
        Row::rejected(
            "deepseek/error-400-invalid-request.json",
            OpenAiCompatible,
            InvalidRequest,
        )
        .code("invalid_request_error"),
        Row::rejected(
            "deepseek/error-402-insufficient-balance.json",
            OpenAiCompatible,
            Quota,
        )
        .status(402)
        .code("invalid_request_error"),
        // Ollama.
        Row::reply(
            "ollama/completion-cloud-gpt-oss-20b.json",
            OpenAiCompatible,
            "gpt-oss:20b",
        )
        .usage(172, 88, None, None)
        .fingerprint("fp_ollama"),
        Row::reply(
            "ollama/completion-local-qwen3.json",
            OpenAiCompatible,
            "qwen3:0.6b",
        )
        .usage(136, 15, None, None)
        .fingerprint("fp_ollama"),
        Row::rejected(
            "ollama/error-404-model-not-found-native-api.json",
            OpenAiCompatible,
            NotFound,
        )
        .status(404),
        Row::rejected(
            "ollama/error-404-model-not-found-openai-compat.json",
            OpenAiCompatible,
            NotFound,
        )
        .status(404),
    ]
}

#[test]
fn every_fixture_parses_as_its_row_says() {
    let mut failures = Vec::new();
    for row in rows() {
        let parsed = parse_reply(row.kind, &recorded(&row));
        if let Err(why) = check(&row, &parsed) {
            failures.push(format!("{}: {why}\n    got {parsed:?}", row.file));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Real bodies read as the wrong provider, or cut off mid-way, are the likeliest garbage a
/// misconfigured pin or a dropped connection produces.
#[test]
fn every_fixture_as_every_kind_and_truncated_is_read_without_panicking() {
    for row in rows() {
        let response = recorded(&row);
        for cut in [response.body.len(), response.body.len() / 2, 1] {
            let mut damaged = response.clone();
            damaged.body.truncate(cut);
            for kind in ProviderKind::ALL {
                let parsed = parse_reply(kind, &damaged);
                if cut < response.body.len() && (200..300).contains(&damaged.status) {
                    assert!(
                        matches!(parsed, Parsed::Unparseable { .. }),
                        "{} cut at {cut} as {kind}: {parsed:?}",
                        row.file
                    );
                }
            }
        }
    }
}

#[test]
fn every_file_in_a_covered_folder_has_a_row_or_a_reason() {
    let rows = rows();
    let in_table: BTreeSet<&str> = rows.iter().map(|r| r.file).collect();
    let skipped: BTreeSet<&str> = SKIPS.iter().map(|(file, _)| *file).collect();
    assert_eq!(in_table.len(), rows.len(), "a file has two rows");
    assert!(
        in_table.is_disjoint(&skipped),
        "a file is both in the table and skipped"
    );
    let accounted: BTreeSet<&str> = in_table.union(&skipped).copied().collect();
    let mut problems = Vec::new();
    for file in covered_files() {
        let name = file.rsplit('/').next().unwrap_or_default();
        let is_error = name.starts_with("error-") && !name.ends_with(".headers.txt");
        if is_error
            && !rows
                .iter()
                .any(|r| r.file == file && matches!(r.expect, Expect::Rejected { .. }))
        {
            problems.push(format!(
                "{file}: error fixture without a row asserting its class"
            ));
        } else if let Some(stem) = file.strip_suffix(".headers.txt") {
            // A headers file belongs to the body recorded with it.
            if !accounted.iter().any(|f| body_stem(f) == stem) {
                problems.push(format!(
                    "{file}: headers whose body is neither in the table nor skipped"
                ));
            }
        } else if !accounted.contains(file.as_str()) {
            problems.push(format!("{file}: neither in the table nor in SKIPS"));
        }
    }
    for file in &accounted {
        if !Path::new(FIXTURES).join(file).is_file() {
            problems.push(format!("{file}: listed but missing"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    eprintln!("fixture table: {} rows, {} skips", rows.len(), SKIPS.len());
}

/// `folder/name` of every file in the covered folders.
fn covered_files() -> Vec<String> {
    let mut files = Vec::new();
    for folder in COVERED {
        let dir = Path::new(FIXTURES).join(folder);
        let entries = fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let entry = entry.expect("readable directory entry");
            assert!(
                entry.path().is_file(),
                "{}: unexpected subfolder",
                entry.path().display()
            );
            files.push(format!("{folder}/{}", entry.file_name().to_string_lossy()));
        }
    }
    files.sort();
    files
}

/// The response as recorded: body from the file, status line and headers from `.headers.txt`.
fn recorded(row: &Row) -> RawResponse {
    load(row.file, row.status)
}

/// A fixture (`folder/file`, relative to `tests/fixtures/real`) as a response; `status` is what
/// SOURCES.md says when there is no headers file, and must agree with one when there is.
pub(crate) fn load(file: &str, status: Option<u16>) -> RawResponse {
    let path = Path::new(FIXTURES).join(file);
    let bytes = fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (status, headers) = match fs::read_to_string(headers_path(&path)) {
        Ok(text) => parse_headers(&text, file, status),
        Err(_) => (
            status.unwrap_or_else(|| panic!("{file}: no headers file and no status")),
            Vec::new(),
        ),
    };
    RawResponse {
        status,
        headers,
        body: wrap_inner(file, bytes),
    }
}

fn headers_path(body: &Path) -> PathBuf {
    let name = body.file_name().unwrap_or_default().to_string_lossy();
    body.with_file_name(format!("{}.headers.txt", body_stem(&name)))
}

/// A body file's name without its extension; model names carry dots (`gpt-4.5`), so only the
/// known fixture extensions are removed.
fn body_stem(name: &str) -> &str {
    [".inner.json", ".fragment.txt", ".json", ".sse", ".txt"]
        .iter()
        .find_map(|ext| name.strip_suffix(ext))
        .unwrap_or(name)
}

/// `HTTP/1.1 529 ` then `name: value` lines; names lower-cased as the transport delivers them.
fn parse_headers(text: &str, file: &str, said: Option<u16>) -> (u16, Vec<(String, String)>) {
    let mut lines = text.lines();
    let status_line = lines.next().unwrap_or_default();
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{file}: bad status line {status_line:?}"));
    if let Some(said) = said {
        assert_eq!(
            said, status,
            "{file}: row status disagrees with the headers file"
        );
    }
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    (status, headers)
}

/// `.inner.json` holds only the value of the wire body's `error` key (SOURCES.md).
fn wrap_inner(file: &str, bytes: Vec<u8>) -> Vec<u8> {
    if !file.ends_with(".inner.json") {
        return bytes;
    }
    let inner: Value = serde_json::from_slice(&bytes).expect("inner fixture is JSON");
    json!({ "error": inner }).to_string().into_bytes()
}

fn check(row: &Row, parsed: &Parsed) -> Result<(), String> {
    match (&row.expect, parsed) {
        (
            Expect::Reply {
                model,
                upstream,
                usage,
                cost,
                fingerprint,
            },
            Parsed::Reply(reply),
        ) => {
            same(
                "served_model",
                &reply.served_model.as_deref(),
                &Some(*model),
            )?;
            same("upstream", &reply.upstream.as_deref(), upstream)?;
            same("usage", &reply.usage, usage)?;
            same("reported_cost_usd", &reply.reported_cost_usd, cost)?;
            let served_fingerprint = reply.system_fingerprint.as_deref();
            same("system_fingerprint", &served_fingerprint, fingerprint)?;
            same("fallback_model", &reply.fallback_model.as_deref(), &None)?;
            same("request_id", &reply.request_id.as_deref(), &row.request_id)
        }
        (Expect::Rejected { class, code }, Parsed::Rejected(rejected)) => {
            same("class", &rejected.class, class)?;
            same("code", &rejected.code.as_deref(), code)?;
            same(
                "request_id",
                &rejected.request_id.as_deref(),
                &row.request_id,
            )?;
            if rejected.message.is_empty() {
                return Err("empty message".to_owned());
            }
            Ok(())
        }
        (Expect::Unparseable, Parsed::Unparseable { .. }) => Ok(()),
        (expect, _) => Err(format!("expected {expect:?}")),
    }
}

fn same<T: PartialEq + std::fmt::Debug>(what: &str, got: &T, want: &T) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: got {got:?}, want {want:?}"))
    }
}
