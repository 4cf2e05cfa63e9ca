//! The lock as it is written since version 3: the contract a reviewer reads, then the raw
//! samples, compressed, one line per probe.
//!
//! ```text
//! { "lock_version": 3, "modelpin_version": …, "config_digest": …,
//!   "pins":    { PIN: { served IDs, upstreams, fingerprints, price,
//!                       probes: { PROBE: { digest, max_tokens, temperature, prompt_tokens, samples } },
//!                       first_tokens: { top_logprobs, discovery, inputs: { ID: { …, calls } }, off },
//!                       tiers_missing } },
//!   "samples": { PIN: { "probes": { PROBE: BLOB }, "first_tokens": { ID: BLOB } } } }
//! ```
//!
//! A BLOB is the standard base64 of raw DEFLATE (RFC 1951) of compact JSON: a probe's
//! `{"outputs": […], "completion_tokens": […]}`, a tier input's `{"tokens": […], "top": […]}`.
//! `samples` and `calls` in the contract say how many each blob holds, and reading checks
//! they agree. Decompression is bounded (`MAX_SAMPLE_BYTES` for the whole file), so a small
//! file cannot expand without limit.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use super::{Discovery, Lock, LockedFirstTokens, LockedInput, LockedPin, LockedPrice, LockedProbe};

/// Most bytes the samples of one lock may decompress to, all blobs together: four times the
/// largest lock file read (and so four times what a version-2 file could hold inline), which
/// bounds the memory a small damaged or hostile file can claim.
pub const MAX_SAMPLE_BYTES: u64 = 4 * super::MAX_LOCK_BYTES;

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(clippy::struct_field_names)] // `lock_version` is the file's own key
pub(super) struct File {
    pub lock_version: u32,
    pub modelpin_version: String,
    pub config_digest: String,
    pub pins: BTreeMap<String, Pin>,
    pub samples: BTreeMap<String, PinSamples>,
}

/// One pin's contract: what a review of a re-lock looks at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Pin {
    pub provider: String,
    pub kind: String,
    pub model: String,
    pub served_models: BTreeMap<String, u64>,
    pub upstreams: BTreeMap<String, u64>,
    pub system_fingerprints: Vec<String>,
    pub effective_price: Option<LockedPrice>,
    pub probes: BTreeMap<String, Probe>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_tokens: Option<Tier>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tiers_missing: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Probe {
    pub digest: String,
    pub max_tokens: u32,
    pub temperature: f64,
    /// Distinct prompt token counts: the tokenizer's fingerprint for this probe.
    pub prompt_tokens: Vec<u64>,
    /// Answers recorded in the probe's blob.
    pub samples: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Tier {
    pub top_logprobs: u8,
    pub discovery: Discovery,
    pub inputs: BTreeMap<String, Input>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub off: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Input {
    pub system: Option<String>,
    pub prompt: String,
    pub digest: String,
    pub prompt_tokens: Vec<u64>,
    /// One-token calls recorded in the input's blob.
    pub calls: usize,
}

/// One pin's raw samples, by probe and by tier input.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PinSamples {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub probes: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub first_tokens: BTreeMap<String, String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProbeSamples {
    outputs: Vec<String>,
    completion_tokens: Vec<u64>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct InputSamples {
    tokens: Vec<String>,
    top: Vec<Vec<(String, f64)>>,
}

/// The file form of an in-memory lock.
pub(super) fn split(lock: &Lock) -> File {
    let mut pins = BTreeMap::new();
    let mut samples = BTreeMap::new();
    for (id, pin) in &lock.pins {
        let (contract, blobs) = split_pin(pin);
        pins.insert(id.clone(), contract);
        samples.insert(id.clone(), blobs);
    }
    File {
        // Whatever version it was read from, it is written as this one.
        lock_version: super::LOCK_VERSION,
        modelpin_version: lock.modelpin_version.clone(),
        config_digest: lock.config_digest.clone(),
        pins,
        samples,
    }
}

fn split_pin(pin: &LockedPin) -> (Pin, PinSamples) {
    let mut blobs = PinSamples::default();
    let probes = pin
        .probes
        .iter()
        .map(|(name, p)| {
            let blob = ProbeSamples {
                outputs: p.outputs.clone(),
                completion_tokens: p.completion_tokens.clone(),
            };
            blobs.probes.insert(name.clone(), pack(&blob));
            let probe = Probe {
                digest: p.digest.clone(),
                max_tokens: p.max_tokens,
                temperature: p.temperature,
                prompt_tokens: p.prompt_tokens.clone(),
                samples: p.outputs.len(),
            };
            (name.clone(), probe)
        })
        .collect();
    let first_tokens = pin.first_tokens.as_ref().map(|tier| Tier {
        top_logprobs: tier.top_logprobs,
        discovery: tier.discovery,
        inputs: tier
            .inputs
            .iter()
            .map(|(id, input)| {
                let blob = InputSamples {
                    tokens: input.tokens.clone(),
                    top: input.top.clone(),
                };
                blobs.first_tokens.insert(id.clone(), pack(&blob));
                let contract = Input {
                    system: input.system.clone(),
                    prompt: input.prompt.clone(),
                    digest: input.digest.clone(),
                    prompt_tokens: input.prompt_tokens.clone(),
                    calls: input.tokens.len(),
                };
                (id.clone(), contract)
            })
            .collect(),
        off: tier.off.clone(),
    });
    let contract = Pin {
        provider: pin.provider.clone(),
        kind: pin.kind.clone(),
        model: pin.model.clone(),
        served_models: pin.served_models.clone(),
        upstreams: pin.upstreams.clone(),
        system_fingerprints: pin.system_fingerprints.clone(),
        effective_price: pin.effective_price,
        probes,
        first_tokens,
        tiers_missing: pin.tiers_missing.clone(),
    };
    (contract, blobs)
}

/// Decompression left for the rest of a file.
pub(super) struct Budget(pub u64);

/// The in-memory lock a file stands for; the error says which pin and probe did not read.
pub(super) fn join(file: File) -> Result<Lock, String> {
    let mut budget = Budget(MAX_SAMPLE_BYTES);
    let mut samples = file.samples;
    if let Some(extra) = samples.keys().find(|id| !file.pins.contains_key(*id)) {
        return Err(format!(
            "samples for pin `{extra}`, which the lock does not hold"
        ));
    }
    let mut pins = BTreeMap::new();
    for (id, contract) in file.pins {
        let blobs = samples.remove(&id).unwrap_or_default();
        let pin =
            join_pin(contract, &blobs, &mut budget).map_err(|why| format!("pin `{id}`: {why}"))?;
        pins.insert(id, pin);
    }
    Ok(Lock {
        lock_version: file.lock_version,
        modelpin_version: file.modelpin_version,
        config_digest: file.config_digest,
        pins,
    })
}

/// One pin from its contract and its samples.
pub(super) fn join_pin(
    contract: Pin,
    blobs: &PinSamples,
    budget: &mut Budget,
) -> Result<LockedPin, String> {
    if let Some(extra) = blobs
        .probes
        .keys()
        .find(|p| !contract.probes.contains_key(*p))
    {
        return Err(format!(
            "samples for probe `{extra}`, which the pin does not hold"
        ));
    }
    let mut probes = BTreeMap::new();
    for (name, probe) in contract.probes {
        let blob = blobs
            .probes
            .get(&name)
            .ok_or_else(|| format!("probe `{name}` has no samples"))?;
        let got: ProbeSamples =
            unpack(blob, budget).map_err(|why| format!("samples of probe `{name}`: {why}"))?;
        if got.outputs.len() != probe.samples || got.completion_tokens.len() != probe.samples {
            return Err(format!(
                "samples of probe `{name}` hold {} answers and {} token counts, not the {} its entry says",
                got.outputs.len(),
                got.completion_tokens.len(),
                probe.samples
            ));
        }
        let locked = LockedProbe {
            digest: probe.digest,
            max_tokens: probe.max_tokens,
            temperature: probe.temperature,
            prompt_tokens: probe.prompt_tokens,
            outputs: got.outputs,
            completion_tokens: got.completion_tokens,
        };
        probes.insert(name, locked);
    }
    let first_tokens = match contract.first_tokens {
        Some(tier) => Some(join_tier(tier, blobs, budget)?),
        None if blobs.first_tokens.is_empty() => None,
        None => return Err("first-token samples, but no first-token tier".to_owned()),
    };
    Ok(LockedPin {
        provider: contract.provider,
        kind: contract.kind,
        model: contract.model,
        served_models: contract.served_models,
        upstreams: contract.upstreams,
        system_fingerprints: contract.system_fingerprints,
        effective_price: contract.effective_price,
        probes,
        first_tokens,
        tiers_missing: contract.tiers_missing,
    })
}

fn join_tier(
    tier: Tier,
    blobs: &PinSamples,
    budget: &mut Budget,
) -> Result<LockedFirstTokens, String> {
    if let Some(extra) = blobs
        .first_tokens
        .keys()
        .find(|i| !tier.inputs.contains_key(*i))
    {
        return Err(format!(
            "samples for first-token input `{extra}`, which the tier does not hold"
        ));
    }
    let mut inputs = BTreeMap::new();
    for (id, input) in tier.inputs {
        let blob = blobs
            .first_tokens
            .get(&id)
            .ok_or_else(|| format!("first-token input `{id}` has no samples"))?;
        let got: InputSamples = unpack(blob, budget)
            .map_err(|why| format!("samples of first-token input `{id}`: {why}"))?;
        if got.tokens.len() != input.calls || got.top.len() != input.calls {
            return Err(format!(
                "samples of first-token input `{id}` hold {} tokens and {} top lists, not the {} calls its entry says",
                got.tokens.len(),
                got.top.len(),
                input.calls
            ));
        }
        let locked = LockedInput {
            system: input.system,
            prompt: input.prompt,
            digest: input.digest,
            prompt_tokens: input.prompt_tokens,
            tokens: got.tokens,
            top: got.top,
        };
        inputs.insert(id, locked);
    }
    Ok(LockedFirstTokens {
        top_logprobs: tier.top_logprobs,
        discovery: tier.discovery,
        inputs,
        off: tier.off,
    })
}

/// Compact JSON, raw DEFLATE at the best level (the same bytes for the same samples), base64.
fn pack<T: Serialize>(value: &T) -> String {
    let json = serde_json::to_vec(value).expect("sample types always serialise");
    let mut deflate = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    deflate
        .write_all(&json)
        .expect("writing to a Vec cannot fail");
    let bytes = deflate.finish().expect("writing to a Vec cannot fail");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The value a blob holds, decompressing at most what is left of `budget`.
fn unpack<T: serde::de::DeserializeOwned>(blob: &str, budget: &mut Budget) -> Result<T, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(blob)
        .map_err(|e| format!("not base64 ({e})"))?;
    let mut json = Vec::new();
    flate2::read::DeflateDecoder::new(bytes.as_slice())
        .take(budget.0.saturating_add(1))
        .read_to_end(&mut json)
        .map_err(|e| format!("not DEFLATE data ({e})"))?;
    let used = json.len() as u64;
    if used > budget.0 {
        return Err(format!(
            "they expand past the {} MiB the samples of one lock may hold",
            MAX_SAMPLE_BYTES / (1024 * 1024)
        ));
    }
    budget.0 -= used;
    serde_json::from_slice(&json).map_err(|e| format!("not the samples modelpin writes ({e})"))
}

#[cfg(test)]
mod tests {
    use super::{Budget, pack, unpack};

    #[test]
    fn blobs_round_trip_and_expansion_is_bounded() {
        let value = vec!["391".to_owned(); 1000];
        let blob = pack(&value);
        let mut budget = Budget(1 << 20);
        let back: Vec<String> = unpack(&blob, &mut budget).unwrap();
        assert_eq!(back, value);
        assert_eq!(budget.0, (1 << 20) - 6001);
        let mut small = Budget(100);
        let err = unpack::<Vec<String>>(&blob, &mut small).unwrap_err();
        assert!(err.contains("expand past"), "{err}");
        for bad in ["***", "aGVsbG8="] {
            assert!(
                unpack::<Vec<String>>(bad, &mut Budget(1000)).is_err(),
                "{bad}"
            );
        }
    }
}
