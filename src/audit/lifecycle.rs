//! Lifecycle data for one audit: the built-in table, the configured feeds, and what providers say
//! about their own models.
//!
//! Lifecycle sources are advisory: a feed that cannot be fetched or parsed is a warning and the
//! last good copy (cached next to the lock, with its fetch time) is used; a provider models
//! endpoint that fails is a note. Neither ever fails a check. Each provider source is queried at
//! most once per audit (keyed by URL), and only for the provider kinds that have one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::audit::Observation;
use crate::config::{Config, Pin};
use crate::lifecycle::signals::{from_hint, mistral_models, openai_models, openrouter_models};
use crate::lifecycle::{Fact, Lifecycle, PinRef, Signal, builtin, feeds, resolve};
use crate::provider::{ModelsEndpoint, ModelsRequest, models_request};
use crate::transport::Transport;

/// Facts from the built-in table and every feed, with a warning per feed that failed.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    pub facts: Vec<Fact>,
    pub warnings: Vec<String>,
}

/// One feed's facts with any warning about them, or why it gave none.
type Loaded = Result<(Vec<Fact>, Option<String>), String>;

impl Facts {
    /// One feed's outcome, added in order.
    fn add(&mut self, loaded: Loaded) {
        match loaded {
            Ok((facts, warning)) => {
                self.facts.extend(facts);
                self.warnings.extend(warning);
            }
            Err(warning) => self.warnings.push(warning),
        }
    }

    /// The built-in table alone (feeds not loaded).
    #[must_use]
    pub fn builtin_only() -> Facts {
        Facts {
            facts: builtin().to_vec(),
            warnings: Vec::new(),
        }
    }
}

/// A feed body as cached next to the lock.
#[derive(Serialize, Deserialize)]
struct CachedFeed {
    url: String,
    fetched_at: DateTime<Utc>,
    body: String,
}

/// The built-in table plus each feed in `settings.deprecation_feeds`, every feed fetched at once.
pub async fn load_facts(config: &Config, transport: &Transport) -> Facts {
    let mut out = Facts {
        facts: builtin().to_vec(),
        warnings: Vec::new(),
    };
    let loads = config
        .settings
        .deprecation_feeds
        .iter()
        .map(|feed| async move {
            if is_remote(feed) {
                remote_feed(config, transport, feed).await
            } else {
                local_feed(feed, config.project()).map(|facts| (facts, None))
            }
        });
    // In feed order, so the facts (and any tie between them) do not depend on timing.
    for loaded in futures::future::join_all(loads).await {
        out.add(loaded);
    }
    out
}

/// The facts at hand without waiting on the network: the built-in table, local feeds, and the
/// last fetched copy of each remote feed (cached next to the lock). What a daemon audits with
/// until its first download of the feeds finishes, so no audit waits on a slow feed.
#[must_use]
pub fn facts_at_hand(config: &Config) -> Facts {
    let mut out = Facts::builtin_only();
    for feed in &config.settings.deprecation_feeds {
        let loaded = if is_remote(feed) {
            from_cache(config, feed, "not downloaded yet").ok_or_else(|| {
                format!(
                    "feed {feed}: not downloaded yet and no earlier copy: its dates are missing until the download finishes"
                )
            })
        } else {
            local_feed(feed, config.project()).map(|facts| (facts, None))
        };
        out.add(loaded);
    }
    out
}

/// A feed named by URL (fetched, and cached next to the lock) rather than by path.
pub(crate) fn is_remote(feed: &str) -> bool {
    feed.starts_with("https://") || feed.starts_with("http://")
}

/// The last fetched copy of the feed at `url`, for when it could not be fetched (`why`), with a
/// warning saying so; `None` when there is none.
fn from_cache(config: &Config, url: &str, why: &str) -> Option<(Vec<Fact>, Option<String>)> {
    let (facts, fetched_at) = read_cache(&cache_path(&config.settings.lockfile, url))?;
    let warning = format!(
        "feed {url}: {why}; using the copy fetched at {}",
        fetched_at.to_rfc3339()
    );
    Some((facts, Some(warning)))
}

/// Largest local deprecation feed read: LiteLLM's whole price table is a few megabytes.
pub(crate) const MAX_FEED_BYTES: u64 = 16 * 1024 * 1024;

/// The facts of the feed file at `path`, read under `files::read`'s rules, or why not.
pub(crate) fn local_feed(path: &str, project: &Path) -> Result<Vec<Fact>, String> {
    let fail = |why: String| {
        crate::text::bounded_owned(
            format!("feed {path}: {why}"),
            crate::text::MAX_MESSAGE_CHARS,
        )
    };
    let bytes = crate::files::read(Path::new(path), project, MAX_FEED_BYTES)
        .map_err(|refusal| fail(format!("cannot read it: {refusal}")))?;
    feeds::parse_feed(&bytes, None).map_err(|e| fail(e.to_string()))
}

/// Fetches a remote feed; on any failure falls back to the cached copy, saying so.
async fn remote_feed(config: &Config, transport: &Transport, url: &str) -> Loaded {
    let cache = cache_path(&config.settings.lockfile, url);
    let until = Instant::now() + config.settings.timeout;
    let fresh = match transport.get("", url, &[], Some(until)).await {
        Ok(d) if (200..300).contains(&d.response.status) => {
            match feeds::parse_feed(&d.response.body, None) {
                Ok(facts) => Ok((facts, d.response.body)),
                Err(e) => Err(format!("not a feed modelpin reads: {e}")),
            }
        }
        Ok(d) => Err(format!("HTTP {}", d.response.status)),
        Err(f) => Err(f.message),
    };
    match fresh {
        Ok((facts, body)) => {
            let record = CachedFeed {
                url: url.to_owned(),
                fetched_at: Utc::now(),
                body: String::from_utf8_lossy(&body).into_owned(),
            };
            let warning = write_cache(&cache, &record).err().map(|e| {
                format!(
                    "feed {url}: fetched, but the cache {} could not be written: {e}",
                    cache.display()
                )
            });
            Ok((facts, warning))
        }
        Err(why) => from_cache(config, url, &why)
            .ok_or_else(|| format!("feed {url}: {why}; no earlier copy to use")),
    }
}

/// `<lock dir>/.modelpin-feeds/<sha256(url) prefix>.json`.
fn cache_path(lockfile: &Path, url: &str) -> PathBuf {
    let digest = crate::lock::digest(url.as_bytes());
    let name = &digest["sha256:".len().."sha256:".len() + 16];
    lockfile
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join(".modelpin-feeds")
        .join(format!("{name}.json"))
}

fn write_cache(path: &Path, record: &CachedFeed) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("json.tmp");
    std::fs::write(
        &tmp,
        serde_json::to_vec(record).map_err(std::io::Error::other)?,
    )?;
    std::fs::rename(tmp, path)
}

fn read_cache(path: &Path) -> Option<(Vec<Fact>, DateTime<Utc>)> {
    let bytes = std::fs::read(path).ok()?;
    let record: CachedFeed = serde_json::from_slice(&bytes).ok()?;
    let facts = feeds::parse_feed(record.body.as_bytes(), None).ok()?;
    Some((facts, record.fetched_at))
}

/// What providers' models endpoints say, per pin: signals naming the pin's model, and notes
/// for endpoints that could not be read.
#[derive(Debug, Clone, Default)]
pub struct ProviderSignals {
    pub signals: Vec<Signal>,
    pub notes: Vec<String>,
}

/// Queries each applicable models endpoint once (by URL) for all `pins`, every URL at once:
/// the transport's semaphores and deadline bound them like any other call.
pub async fn provider_signals(
    config: &Config,
    pins: &[&Pin],
    transport: &Transport,
) -> BTreeMap<String, ProviderSignals> {
    let mut wanted: Vec<(&Pin, String)> = Vec::new();
    let mut requests: BTreeMap<String, (&str, ModelsRequest)> = BTreeMap::new();
    for pin in pins {
        let Some(provider) = config.providers.iter().find(|p| p.name == pin.provider) else {
            continue;
        };
        let Some(request) = models_request(&provider.endpoint, &provider.name, &pin.model) else {
            continue;
        };
        wanted.push((pin, request.url.clone()));
        requests
            .entry(request.url.clone())
            .or_insert((provider.name.as_str(), request));
    }
    let lookups = requests
        .into_iter()
        .map(|(url, (provider, request))| async move {
            let until = Instant::now() + config.settings.timeout;
            let result = match transport
                .get(provider, &request.url, &request.headers, Some(until))
                .await
            {
                Ok(d) if (200..300).contains(&d.response.status) => {
                    parse_models(request.endpoint, &d.response.body)
                }
                Ok(d) => Err(format!("HTTP {}", d.response.status)),
                Err(f) => Err(f.message),
            };
            (url, result)
        });
    let by_url: BTreeMap<String, Result<Vec<Signal>, String>> = futures::future::join_all(lookups)
        .await
        .into_iter()
        .collect();
    let mut out = BTreeMap::new();
    for (pin, url) in wanted {
        let entry: &mut ProviderSignals = out.entry(pin.id.clone()).or_default();
        match &by_url[&url] {
            Ok(signals) => entry
                .signals
                .extend(signals.iter().filter(|s| names(s, pin)).cloned()),
            Err(why) => entry.notes.push(format!("{url}: {why}")),
        }
    }
    out
}

fn parse_models(endpoint: ModelsEndpoint, body: &[u8]) -> Result<Vec<Signal>, String> {
    let parsed = match endpoint {
        ModelsEndpoint::OpenAiModel => openai_models(body),
        ModelsEndpoint::OpenRouterModels => openrouter_models(body),
        ModelsEndpoint::MistralModels => mistral_models(body),
    };
    parsed.map_err(|e| e.to_string())
}

/// Whether a models-endpoint signal is about the pin's model (or an ID it accepts).
fn names(signal: &Signal, pin: &Pin) -> bool {
    signal
        .models
        .iter()
        .any(|m| *m == pin.model || pin.accept.contains(m))
}

/// The pin's lifecycle from every source: table and feeds, the provider's models endpoint, and
/// the lifecycle headers on its own answers.
#[must_use]
pub fn pin_lifecycle(
    config: &Config,
    pin: &Pin,
    obs: &Observation,
    seen: &ProviderSignals,
    facts: &Facts,
) -> Lifecycle {
    let pin_ref = PinRef::from(pin);
    let now = Utc::now();
    let hints = obs
        .replies()
        .flat_map(|(_, r)| r.lifecycle.iter())
        .filter_map(from_hint);
    let live: Vec<Fact> = seen
        .signals
        .iter()
        .cloned()
        .chain(hints)
        .map(|signal| signal.fact_for(&pin_ref, now))
        .collect();
    resolve(
        &pin_ref,
        facts.facts.iter().chain(&live),
        now,
        &config.settings.warn_before,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_at_hand_hold_the_cached_copy_of_a_remote_feed_and_say_so() {
        let dir = tempfile::tempdir().unwrap();
        let url = "https://feeds.example.com/retirements.json";
        std::fs::write(
            dir.path().join("pins.toml"),
            format!(
                "version = 1\n[settings]\ndeprecation_feeds = [\"{url}\"]\n[providers.p]\nkind = \"openai\"\napi_key_env = \"K\"\n[[pin]]\nid = \"a\"\nprovider = \"p\"\nmodel = \"acme-large-2024-08-06\"\nprobes = [\"probes/*.toml\"]\n"
            ),
        )
        .unwrap();
        std::fs::create_dir(dir.path().join("probes")).unwrap();
        std::fs::write(
            dir.path().join("probes/a.toml"),
            "id = \"a\"\nprompt = \"hi\"\nmax_tokens = 4\n",
        )
        .unwrap();
        let config = crate::config::load_for(
            &dir.path().join("pins.toml"),
            crate::config::Needs {
                provider_keys: false,
                channel_secrets: crate::config::ChannelSecrets::WhenSet,
            },
        )
        .unwrap();
        let builtin = Facts::builtin_only().facts.len();
        let none = facts_at_hand(&config);
        assert_eq!(none.facts.len(), builtin);
        assert!(none.warnings[0].contains("not downloaded yet and no earlier copy"));

        let body = String::from_utf8(crate::fixtures::read(
            "deprecation-sources/litellm-model-prices-sample.json",
        ))
        .unwrap();
        let in_feed = feeds::parse_feed(body.as_bytes(), None).unwrap().len();
        write_cache(
            &cache_path(&config.settings.lockfile, url),
            &CachedFeed {
                url: url.to_owned(),
                fetched_at: Utc::now(),
                body,
            },
        )
        .unwrap();
        let cached = facts_at_hand(&config);
        assert_eq!(cached.facts.len(), builtin + in_feed);
        assert!(cached.warnings[0].contains("not downloaded yet; using the copy fetched at"));
    }

    #[test]
    fn cache_sits_next_to_the_lock_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("modelpin.lock");
        let path = cache_path(&lock, "https://example.com/feed.json");
        assert!(path.starts_with(dir.path().join(".modelpin-feeds")));
        assert_ne!(path, cache_path(&lock, "https://example.com/other.json"));
        let body = String::from_utf8(crate::fixtures::read(
            "deprecation-sources/litellm-model-prices-sample.json",
        ))
        .unwrap();
        let at = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        write_cache(
            &path,
            &CachedFeed {
                url: "u".into(),
                fetched_at: at,
                body,
            },
        )
        .unwrap();
        let (facts, fetched_at) = read_cache(&path).unwrap();
        assert!(!facts.is_empty());
        assert_eq!(fetched_at, at);
    }
}
