//! pins.toml as a value: settings, providers, pins, alert channels and the traffic table are
//! built in Rust and written as TOML, so a test names what it changes (`.setting("timeout",
//! "2s")`) instead of editing text. Values are escaped by the `toml` crate.

use std::fmt::Write as _;

use modelpin::provider::ProviderKind;

use crate::harness::{ARITH, KEY_VAR, Test};

/// A TOML value as it appears on the right of `=`.
#[derive(Debug, Clone)]
pub struct Value(String);

impl Value {
    /// Written as given: a date (`2026-01-01`), an inline table.
    pub fn bare(text: &str) -> Value {
        Value(text.to_owned())
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value(toml::Value::String(s.to_owned()).to_string())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::from(s.as_str())
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value(b.to_string())
    }
}

impl From<u32> for Value {
    fn from(n: u32) -> Value {
        Value(n.to_string())
    }
}

impl From<f64> for Value {
    fn from(n: f64) -> Value {
        Value(toml::Value::Float(n).to_string())
    }
}

impl From<&[&str]> for Value {
    fn from(items: &[&str]) -> Value {
        let items: Vec<String> = items.iter().map(|s| Value::from(*s).0).collect();
        Value(format!("[{}]", items.join(", ")))
    }
}

impl<const N: usize> From<[&str; N]> for Value {
    fn from(items: [&str; N]) -> Value {
        Value::from(&items[..])
    }
}

/// Keys in the order they were first set; setting a key again replaces its value.
#[derive(Debug, Clone, Default)]
struct Table(Vec<(String, Value)>);

impl Table {
    fn set(&mut self, key: &str, value: Value) {
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value,
            None => self.0.push((key.to_owned(), value)),
        }
    }

    fn write(&self, out: &mut String) {
        for (key, value) in &self.0 {
            let _ = writeln!(out, "{key} = {}", value.0);
        }
    }
}

/// `[providers.NAME]`.
#[derive(Debug, Clone)]
pub struct Provider {
    name: String,
    fields: Table,
}

impl Provider {
    /// Provider `p` of `kind` at `base_url`, its key in the test key's variable (and the API
    /// version Azure needs).
    pub fn new(kind: ProviderKind, base_url: &str) -> Provider {
        let mut fields = Table::default();
        fields.set("kind", Value::from(kind.to_string()));
        fields.set("base_url", Value::from(base_url));
        fields.set("api_key_env", Value::from(KEY_VAR));
        if kind == ProviderKind::Azure {
            fields.set("api_version", Value::from("2024-10-21"));
        }
        Provider {
            name: "p".to_owned(),
            fields,
        }
    }
}

/// One `[[pin]]`.
#[derive(Debug, Clone)]
pub struct Pin {
    id: String,
    fields: Table,
}

impl Pin {
    /// Pin `id` of `model` on provider `p`, every probe under `probes/`, 3 samples, without the
    /// first-token tier (`first_tokens = false`): most tests count probe calls, and the tier has
    /// its own tests (`first_tokens.rs`, `real_model.rs`), which set it back on.
    pub fn new(id: &str, model: &str) -> Pin {
        let mut fields = Table::default();
        fields.set("id", Value::from(id));
        fields.set("provider", Value::from("p"));
        fields.set("model", Value::from(model));
        fields.set("probes", Value::from(["probes/*.toml"]));
        fields.set("samples", Value::from(3));
        fields.set("first_tokens", Value::from(false));
        Pin {
            id: id.to_owned(),
            fields,
        }
    }

    pub fn samples(self, n: u32) -> Pin {
        self.set("samples", n)
    }

    pub fn set(mut self, key: &str, value: impl Into<Value>) -> Pin {
        self.fields.set(key, value.into());
        self
    }
}

/// One `[alerts.NAME]` channel.
#[derive(Debug, Clone)]
pub struct Channel {
    name: String,
    fields: Table,
}

impl Channel {
    fn new(name: &str, kind: &str) -> Channel {
        let mut fields = Table::default();
        fields.set("kind", Value::from(kind));
        Channel {
            name: name.to_owned(),
            fields,
        }
    }

    pub fn webhook(name: &str, url: &str) -> Channel {
        Channel::new(name, "webhook").set("url", url)
    }

    pub fn alertmanager(name: &str, port: u16) -> Channel {
        Channel::new(name, "alertmanager").set("url", format!("http://127.0.0.1:{port}"))
    }

    pub fn email(name: &str, smtp_port: u16) -> Channel {
        Channel::new(name, "email")
            .set("smtp", format!("smtp://127.0.0.1:{smtp_port}"))
            .set("from", "modelpin <modelpin@example.com>")
            .set("to", ["oncall@example.com"])
    }

    /// A Slack channel whose URL (a secret) is in the variable `url_env`.
    pub fn slack(name: &str, url_env: &str) -> Channel {
        Channel::new(name, "slack").set("url_env", url_env)
    }

    pub fn set(mut self, key: &str, value: impl Into<Value>) -> Channel {
        self.fields.set(key, value.into());
        self
    }
}

/// A whole pins.toml.
#[derive(Debug, Clone)]
pub struct Pins {
    settings: Table,
    providers: Vec<Provider>,
    entries: Vec<Pin>,
    traffic: Option<Table>,
    alerts: Vec<Channel>,
}

/// Settings most tests use: short deadlines so a broken case fails fast.
pub const SHORT: [(&str, &str); 2] = [("timeout", "3s"), ("budget", "20s")];

/// Every second: a daemon test sees a change within a second or two.
pub const EVERY_SECOND: &str = "* * * * * *";

/// Hourly: after the start-up audit of each pin, nothing changes for a while.
pub const HOURLY: &str = "0 0 * * * *";

impl Pins {
    /// `version = 1` and nothing else.
    pub fn new() -> Pins {
        Pins {
            settings: Table::default(),
            providers: Vec::new(),
            entries: Vec::new(),
            traffic: None,
            alerts: Vec::new(),
        }
    }

    /// One provider `p` of `kind` at `base_url` and one pin `pin` of `model` on it.
    pub fn one(kind: ProviderKind, base_url: &str, model: &str) -> Pins {
        Pins::new()
            .provider(Provider::new(kind, base_url))
            .pin(Pin::new("pin", model))
    }

    /// The short deadlines of [`SHORT`].
    pub fn short(self) -> Pins {
        SHORT
            .iter()
            .fold(self, |pins, (key, value)| pins.setting(key, *value))
    }

    /// What a daemon test needs: audits every second, the listener on a port the system picks
    /// (the daemon logs the one it got), the store in the project.
    pub fn daemon(self) -> Pins {
        self.setting("schedule", EVERY_SECOND)
            .setting("metrics", "127.0.0.1:0")
            .setting("store", "store")
    }

    pub fn setting(mut self, key: &str, value: impl Into<Value>) -> Pins {
        self.settings.set(key, value.into());
        self
    }

    pub fn provider(mut self, provider: Provider) -> Pins {
        self.providers.retain(|p| p.name != provider.name);
        self.providers.push(provider);
        self
    }

    pub fn pin(mut self, pin: Pin) -> Pins {
        self.entries.push(pin);
        self
    }

    /// Sets `key` on every pin.
    pub fn each_pin(mut self, key: &str, value: impl Into<Value>) -> Pins {
        let value = value.into();
        for pin in &mut self.entries {
            pin.fields.set(key, value.clone());
        }
        self
    }

    /// `n` pins in all: `pin-2`, `pin-3`, … copies of the first.
    pub fn copies(mut self, n: usize) -> Pins {
        let first = self.entries[0].clone();
        for i in 2..=n {
            let id = format!("pin-{i}");
            let mut copy = first.clone().set("id", id.as_str());
            copy.id = id;
            self.entries.push(copy);
        }
        self
    }

    /// A key of the `[traffic]` table (created by the first).
    pub fn traffic(mut self, key: &str, value: impl Into<Value>) -> Pins {
        self.traffic
            .get_or_insert_with(Table::default)
            .set(key, value.into());
        self
    }

    pub fn alert(mut self, channel: Channel) -> Pins {
        self.alerts.push(channel);
        self
    }

    pub fn to_toml(&self) -> String {
        let mut out = String::from("version = 1\n");
        if !self.settings.0.is_empty() {
            out.push_str("\n[settings]\n");
            self.settings.write(&mut out);
        }
        for provider in &self.providers {
            let _ = writeln!(out, "\n[providers.{}]", provider.name);
            provider.fields.write(&mut out);
        }
        for pin in &self.entries {
            out.push_str("\n[[pin]]\n");
            pin.fields.write(&mut out);
        }
        if let Some(traffic) = &self.traffic {
            out.push_str("\n[traffic]\n");
            traffic.write(&mut out);
        }
        for channel in &self.alerts {
            let _ = writeln!(out, "\n[alerts.{}]", channel.name);
            channel.fields.write(&mut out);
        }
        out
    }

    /// A project with this pins.toml and no probe yet (add them with `Test::probes`).
    pub fn test(&self) -> Test {
        Test::new().pins(&self.to_toml())
    }

    /// A project with this pins.toml and the arithmetic probe.
    pub fn project(&self) -> Test {
        self.test().file("probes/arith.toml", ARITH)
    }

    /// [`Pins::project`] after a successful `modelpin lock`.
    pub fn locked(&self) -> Test {
        self.project().locked()
    }
}
