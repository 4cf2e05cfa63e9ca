//! `[providers.NAME]`: where each provider is and how to authenticate, keys read from the
//! environment only.

use std::ops::Range;

use toml::Spanned;

use super::Provider;
use super::check::{Check, Reported};
use super::raw::{Named, RawProvider, Str};
use crate::provider::{Endpoint, ProviderKind, Secret};

/// Every provider name in file order, with its kind when the kind was valid: pins are checked
/// against this even when a provider table had errors, so one mistake is reported once.
pub(crate) type Known = Vec<(String, Option<ProviderKind>)>;

pub(crate) fn providers(
    check: &mut Check,
    raw: Named<RawProvider>,
    concurrency: usize,
    env: &dyn Fn(&str) -> Option<String>,
) -> (Vec<Provider>, Known) {
    let mut entries: Vec<_> = raw.into_iter().collect();
    entries.sort_by_key(|(name, _)| name.span().start);
    let mut valid = Vec::new();
    let mut known = Vec::new();
    for (name, table) in entries {
        let valid_name = check
            .identifier(&name, "provider name", "provider")
            .is_some();
        let name = name.into_inner();
        let kinds: Vec<&str> = ProviderKind::ALL.iter().map(|k| k.as_str()).collect();
        let kind = check
            .choice(&table.get_ref().kind, "provider kind", &kinds)
            .and_then(ProviderKind::parse);
        known.push((name.clone(), kind));
        let Some(kind) = kind.filter(|_| valid_name) else {
            continue;
        };
        let span = table.span();
        let table = table.into_inner();
        let provider = ProviderTable {
            name: &name,
            kind,
            span,
            raw: &table,
        };
        valid.extend(provider.validate(check, concurrency, env));
    }
    (valid, known)
}

struct ProviderTable<'a> {
    name: &'a str,
    kind: ProviderKind,
    /// The whole table; missing keys point at its header.
    span: Range<usize>,
    raw: &'a RawProvider,
}

impl ProviderTable<'_> {
    fn validate(
        &self,
        check: &mut Check,
        default_concurrency: usize,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Option<Provider> {
        let base_url = self.base_url(check);
        let api_version = self.api_version(check);
        let key = self.api_key(check, env);
        let headers = self.headers(check);
        let seed = self.seed(check);
        let concurrency = match &self.raw.concurrency {
            Some(c) => check.at_least_one(c, "concurrency"),
            None => Some(default_concurrency),
        };
        let (api_key_env, api_key) = key?;
        Some(Provider {
            name: self.name.to_string(),
            endpoint: Endpoint {
                kind: self.kind,
                base_url: base_url?,
                api_key,
                api_version: api_version.ok()?,
                headers: headers?,
                seed: seed?,
            },
            api_key_env,
            concurrency: concurrency?,
        })
    }

    fn missing(&self, check: &mut Check, key: &str, help: &str) {
        check
            .error(
                self.span.clone(),
                format!("missing key `{key}` in [providers.{}]", self.name),
            )
            .help(help);
    }

    fn base_url(&self, check: &mut Check) -> Option<String> {
        let Some(url) = &self.raw.base_url else {
            if let Some(default) = self.kind.default_base_url() {
                return Some(default.to_string());
            }
            let example = match self.kind {
                ProviderKind::Azure => "`https://my-resource.openai.azure.com`",
                _ => "`http://127.0.0.1:8000/v1`",
            };
            let help = format!(
                "kind `{}` has no default; add its API root, like {example}",
                self.kind
            );
            self.missing(check, "base_url", &help);
            return None;
        };
        let url = check.http_url(url, "base_url")?;
        if let Some(at) = url.find(['?', '#']) {
            let what = if url[at..].starts_with('?') {
                "a query"
            } else {
                "a fragment"
            };
            let mut d = check.error(
                self.raw.base_url.as_ref().map_or(0..0, toml::Spanned::span),
                format!("`base_url` has {what}; it must be the API root only"),
            );
            if url[at..].to_ascii_lowercase().contains("key") {
                d = d.note("a key in the URL would be written into every log and report that shows the URL");
            }
            d.help("put the key in an environment variable named by `api_key_env`, and extra parameters in `headers`");
            return None;
        }
        Some(url.trim_end_matches('/').to_string())
    }

    /// `Ok(None)` when not applicable.
    fn api_version(&self, check: &mut Check) -> Result<Option<String>, Reported> {
        match (&self.raw.api_version, self.kind) {
            (Some(v), ProviderKind::Azure) => {
                check.non_empty(v, "api_version").map(Some).ok_or(Reported)
            }
            (None, ProviderKind::Azure) => {
                self.missing(
                    check,
                    "api_version",
                    "azure needs one, like `api_version = \"2024-10-21\"`",
                );
                Err(Reported)
            }
            (Some(v), kind) => {
                check.error(
                    v.span(),
                    format!("`api_version` only applies to kind `azure`, not `{kind}`"),
                );
                Err(Reported)
            }
            (None, _) => Ok(None),
        }
    }

    /// The variable's name and the key read from it; openai-compatible servers may need none.
    fn api_key(
        &self,
        check: &mut Check,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Option<(Option<String>, Option<Secret>)> {
        let Some(var) = &self.raw.api_key_env else {
            if self.kind == ProviderKind::OpenAiCompatible {
                return Some((None, None));
            }
            let help = format!(
                "kind `{}` needs an API key: add `api_key_env = \"{}\"` naming the variable that holds it",
                self.kind,
                suggested_env(self.kind)
            );
            self.missing(check, "api_key_env", &help);
            return None;
        };
        let name = check.env_name(var)?;
        match env(&name) {
            Some(value) if !value.is_empty() => Some((Some(name), Some(Secret::new(value)))),
            found => {
                let state = if found.is_some() {
                    "is empty"
                } else {
                    "is not set"
                };
                check
                    .error(var.span(), format!("environment variable `{name}` {state}"))
                    .help(format!(
                        "set it to the API key for [providers.{}]",
                        self.name
                    ));
                None
            }
        }
    }

    /// In file order, names lower-case (as `HttpRequest` carries them).
    /// Whether each sampled call carries a fresh random `seed`: on by default where the API takes
    /// one. A server whose unseeded draws follow one stream from start (llama-cpp-python's) gives
    /// replicas started alike the same draws; a seed per call makes every draw independent.
    fn seed(&self, check: &mut Check) -> Option<bool> {
        let takes_seed = self.kind.takes_seed();
        match &self.raw.seed {
            None => Some(takes_seed),
            Some(seed) if *seed.get_ref() && !takes_seed => {
                let why = match self.kind {
                    ProviderKind::Gemini => {
                        "Gemini draws a fresh seed itself for a call that names none"
                    }
                    _ => "its API takes no seed",
                };
                check
                    .error(
                        seed.span(),
                        format!(
                            "`seed` is for OpenAI-shaped providers, not kind `{}`",
                            self.kind
                        ),
                    )
                    .help(format!("remove the key: {why}"));
                None
            }
            Some(seed) => Some(*seed.get_ref()),
        }
    }

    fn headers(&self, check: &mut Check) -> Option<Vec<(String, String)>> {
        let Some(raw) = &self.raw.headers else {
            return Some(Vec::new());
        };
        let mut entries: Vec<(&Str, &Str)> = raw.iter().collect();
        entries.sort_by_key(|(name, _)| name.span().start);
        let mut ok = true;
        let mut out = Vec::new();
        for (name, value) in entries {
            ok &= header(check, name, value);
            out.push((name.get_ref().to_ascii_lowercase(), value.get_ref().clone()));
        }
        ok.then_some(out)
    }
}

fn header(check: &mut Check, name: &Spanned<String>, value: &Spanned<String>) -> bool {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.get_ref().is_empty() || !name.get_ref().chars().all(token) {
        check.error(
            name.span(),
            format!("invalid header name `{}`", name.get_ref()),
        );
        return false;
    }
    if value.get_ref().contains(['\r', '\n']) {
        check.error(value.span(), "header values must be on one line");
        return false;
    }
    true
}

fn suggested_env(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::OpenAi | ProviderKind::OpenAiCompatible => "OPENAI_API_KEY",
        ProviderKind::OpenRouter => "OPENROUTER_API_KEY",
        ProviderKind::Azure => "AZURE_OPENAI_API_KEY",
        ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
        ProviderKind::Gemini => "GEMINI_API_KEY",
    }
}
