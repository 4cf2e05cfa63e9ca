//! The real model server the swap tests stand on (tests/realmodel/serve.py): one model ID
//! whatever variant answers, real token counts from each variant's own tokenizer, logprobs in
//! OpenAI's shape, greedy answers that repeat. Missing llama-cpp-python fails under CI and skips
//! elsewhere.

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

#[test]
fn one_model_id_with_real_swaps_behind_it() {
    let Some(server) = Server::start() else {
        return;
    };
    let (status, models) = server_models(&server);
    assert_eq!(status, 200);
    assert_eq!(models["data"][0]["id"], MODEL_ID, "{models}");

    let mut prompt = std::collections::BTreeMap::new();
    for variant in VARIANTS {
        server.set_variant(variant);
        let reply = answer(&server, &request(1, 0.0));
        assert_eq!(reply["model"], MODEL_ID, "{variant}: {reply}");
        prompt.insert(*variant, prompt_tokens(&reply));
    }
    // Gemma's tokenizer and template count the same chat differently from SmolLM2's.
    assert_ne!(prompt["family"], prompt["base"], "{prompt:?}");
    // The hidden system message is billed.
    assert!(prompt["system"] > prompt["base"], "{prompt:?}");
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

    server.set_variant("base");
    let mut first = request(1, 0.0);
    first["logprobs"] = json!(true);
    first["top_logprobs"] = json!(5);
    let reply = answer(&server, &first);
    assert_eq!(reply["usage"]["completion_tokens"], 1, "{reply}");
    let content = &reply["choices"][0]["logprobs"]["content"];
    assert_eq!(content.as_array().map(Vec::len), Some(1), "{reply}");
    let sampled = &content[0];
    assert_eq!(
        sampled["token"], reply["choices"][0]["message"]["content"],
        "{reply}"
    );
    let top = sampled["top_logprobs"].as_array().expect("top_logprobs");
    assert_eq!(top.len(), 5, "{reply}");
    let logprobs: Vec<f64> = top.iter().map(|t| t["logprob"].as_f64().unwrap()).collect();
    assert!(logprobs.windows(2).all(|w| w[0] >= w[1]), "{logprobs:?}");
    assert!(logprobs.iter().all(|&lp| lp <= 0.0), "{logprobs:?}");
    assert!(
        top.iter().any(|t| t["token"] == sampled["token"]),
        "the sampled token is among the top 5: {reply}"
    );
    // The same request meets the same distribution, to the last digit.
    let again = answer(&server, &first);
    assert_eq!(
        again["choices"][0]["logprobs"]["content"][0]["top_logprobs"], sampled["top_logprobs"],
        "{again}"
    );

    let greedy = |server: &Server| {
        answer(server, &request(16, 0.0))["choices"][0]["message"]["content"]
            .as_str()
            .expect("content")
            .to_owned()
    };
    let once = greedy(&server);
    assert!(!once.is_empty());
    assert_eq!(greedy(&server), once, "greedy answers repeat");
}

#[test]
fn unknown_model_is_an_openai_404() {
    let Some(server) = Server::start() else {
        return;
    };
    let mut body = request(1, 0.0);
    body["model"] = json!("gpt-4o");
    let (status, reply) = server.chat(&body);
    assert_eq!(status, 404, "{reply}");
    assert_eq!(reply["error"]["code"], "model_not_found", "{reply}");
    assert_eq!(server.stats()["calls"], 0);
}

/// `GET {base_url}/models`: the pin's base URL is where the model list is.
fn server_models(server: &Server) -> (u16, Value) {
    let origin = format!("http://127.0.0.1:{}", server.port);
    let path = format!(
        "{}/models",
        server.base_url().strip_prefix(&origin).unwrap()
    );
    let (status, _, body) =
        crate::support::http::get(server.port, &path).expect("serve.py answers");
    (status, serde_json::from_str(&body).expect("JSON"))
}
