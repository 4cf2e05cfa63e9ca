//! The real servers the swap tests stand on: llama-cpp-python's own `python -m llama_cpp.server`
//! behind tests/realmodel/stack.py's proxy. One model ID whatever variant answers, real token
//! counts from each variant's own tokenizer, and the logprob conventions of the real server as
//! modelpin meets them: the sampled token appended to `top_logprobs` when it is not among the
//! top ones, a repeated request meeting the same numbers on one instance and other numbers on
//! the other numeric path, a request's `seed` deciding its draw. Missing llama-cpp-python fails under CI and skips elsewhere.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::support::real_model::{MODEL_ID, Server};

const VARIANTS: &[&str] = &["base", "family", "requant", "temperature", "system"];

fn request(max_tokens: u32, temperature: f64) -> Value {
    json!({
        "model": MODEL_ID,
        "messages": [{ "role": "user", "content": "Name one colour." }],
        "max_tokens": max_tokens,
        "temperature": temperature,
    })
}

fn answer(server: &Server, body: &Value) -> Value {
    let (status, reply) = server.chat(body);
    assert_eq!(status, 200, "chat completion: {reply}");
    reply
}

fn prompt_tokens(reply: &Value) -> u64 {
    reply["usage"]["prompt_tokens"]
        .as_u64()
        .expect("usage.prompt_tokens")
}

/// A one-token call at temperature 1 asking `top_logprobs: 10`, as the first-token tier asks.
fn tier_call(prompt: &str) -> Value {
    json!({
        "model": MODEL_ID,
        "messages": [{ "role": "user", "content": prompt }],
        "max_tokens": 1,
        "temperature": 1.0,
        "logprobs": true,
        "top_logprobs": 10,
    })
}

#[test]
fn one_model_id_with_real_swaps_and_real_logprob_conventions() {
    let Some(server) = Server::start() else {
        return;
    };
    let mut prompt = std::collections::BTreeMap::new();
    for variant in VARIANTS {
        server.set_variant(variant);
        let reply = answer(&server, &request(1, 0.0));
        assert_eq!(reply["model"], MODEL_ID, "{variant}: {reply}");
        prompt.insert(*variant, prompt_tokens(&reply));
    }
    // Gemma's tokenizer and template count the same chat differently from SmolLM2's.
    assert_ne!(prompt["family"], prompt["base"], "{prompt:?}");
    // The hidden system message is billed: it takes the place of the default system message
    // SmolLM2's chat template puts before a chat that has none, so the count changes.
    assert_ne!(prompt["system"], prompt["base"], "{prompt:?}");
    // Same weights' tokenizer, same count.
    assert_eq!(prompt["requant"], prompt["base"], "{prompt:?}");

    let spent = server.stats();
    assert_eq!(spent["variant"], "system", "{spent}");
    assert_eq!(spent["calls"], VARIANTS.len(), "{spent}");
    assert_eq!(
        spent["prompt_tokens"],
        prompt.values().sum::<u64>(),
        "{spent}"
    );

    // llama.cpp's convention: the sampled token is always listed, appended as an 11th entry
    // (the least probable) when it is not among the top 10. Asked without truncation (the
    // server's own `top_k`/`top_p`/`min_p` defaults never draw that far down), as a client
    // keeping OpenAI's sampling defaults would.
    server.set_variant("base");
    let mut untruncated = tier_call("Name a flower.");
    untruncated["top_k"] = json!(0);
    untruncated["top_p"] = json!(1.0);
    untruncated["min_p"] = json!(0.0);
    let mut lengths = BTreeSet::new();
    let mut first_top = None;
    for _ in 0..40 {
        let reply = answer(&server, &untruncated);
        let content = &reply["choices"][0]["logprobs"]["content"][0];
        let top = content["top_logprobs"].as_array().expect("top_logprobs");
        lengths.insert(top.len());
        assert!(
            top.iter().any(|t| t["token"] == content["token"]),
            "the sampled token is listed: {reply}"
        );
        let logprobs: Vec<f64> = top.iter().map(|t| t["logprob"].as_f64().unwrap()).collect();
        assert!(logprobs.iter().all(|&lp| lp <= 0.0), "{logprobs:?}");
        if top.len() == 11 {
            assert_eq!(top[10]["token"], content["token"], "appended last: {reply}");
        }
        // One instance, one prompt: the same ten numbers every time.
        let ten: Vec<Value> = top.iter().take(10).cloned().collect();
        assert_eq!(first_top.get_or_insert_with(|| ten.clone()), &ten);
    }
    assert!(
        lengths.contains(&10) && lengths.contains(&11),
        "over 40 draws some sampled token fell outside the top 10: {lengths:?}"
    );

    // The jittering variant: the same file on another numeric path, one of two at random.
    server.set_variant("jitter");
    let mut seen = BTreeSet::new();
    for _ in 0..16 {
        let reply = answer(&server, &tier_call("Name a flower."));
        let top = &reply["choices"][0]["logprobs"]["content"][0]["top_logprobs"][0]["logprob"];
        seen.insert(top.to_string());
    }
    assert_eq!(seen.len(), 2, "two numeric paths: {seen:?}");
    let spent = server.stats();
    assert!(
        spent["by_server"]["base_b"].as_u64().unwrap() > 0,
        "{spent}"
    );

    // Without logprobs asked of it (the proxy strips them), the server reports none.
    server.set_logprobs(false);
    let reply = answer(&server, &tier_call("Name a flower."));
    assert!(reply["choices"][0]["logprobs"].is_null(), "{reply}");
    server.set_logprobs(true);

    // The server draws from the request's seed: one seed gives one first token, on either
    // replica; a fresh seed a call gives the distribution's spread. Without one it takes the
    // next seed of a stream that starts alike in every process (llama-cpp-python's
    // `set_seed(random.Random(self._seed).randint(…))`), which is why modelpin sends its own.
    server.set_variant("base");
    let first = |body: &Value| {
        answer(&server, body)["choices"][0]["logprobs"]["content"][0]["token"]
            .as_str()
            .expect("first token")
            .to_owned()
    };
    let mut seeded = tier_call("Name a country.");
    seeded["seed"] = json!(20_261_207);
    let same: BTreeSet<String> = (0..8).map(|_| first(&seeded)).collect();
    assert_eq!(same.len(), 1, "one seed, one draw: {same:?}");
    let spread: BTreeSet<String> = (0..24)
        .map(|i| {
            seeded["seed"] = json!(1_000 + i);
            first(&seeded)
        })
        .collect();
    assert!(spread.len() > 1, "fresh seeds, the spread: {spread:?}");

    let greedy = |server: &Server| {
        answer(server, &request(16, 0.0))["choices"][0]["message"]["content"]
            .as_str()
            .expect("content")
            .to_owned()
    };
    server.set_variant("base");
    let once = greedy(&server);
    assert!(!once.is_empty());
    assert_eq!(greedy(&server), once, "greedy answers repeat");
}
