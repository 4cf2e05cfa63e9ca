//! Process exit codes: one type and one mapping, as DESIGN.md fixes them.
//!
//! `check`, `traffic` and `scan` exit with the worst pin's status; `lock` with how recording went;
//! every tool failure (usage, config, I/O) with `Error`. Nothing else in the program names a
//! bare number.

use serde::{Deserialize, Serialize};

use crate::finding::PinStatus;

/// An exit code of the `modelpin` process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Exit {
    /// Every pin ok (warnings allowed unless `--strict`); `lock`: every pin recorded.
    Ok,
    /// Drift: at least one error-severity finding; `lock`: a pinned model does not exist.
    Failed,
    /// Usage or config error, or the tool itself failed.
    Error,
    /// Nothing drifted, but something could not be measured.
    Inconclusive,
}

impl Exit {
    #[must_use]
    pub fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::Failed => 1,
            Exit::Error => 2,
            Exit::Inconclusive => 3,
        }
    }

    /// The exit code for an audit whose worst pin has `status`.
    #[must_use]
    pub fn of_status(status: PinStatus, strict: bool) -> Exit {
        match status {
            PinStatus::Warning if strict => Exit::Failed,
            PinStatus::Ok | PinStatus::Warning => Exit::Ok,
            PinStatus::Drift => Exit::Failed,
            PinStatus::Inconclusive => Exit::Inconclusive,
        }
    }

    fn from_code(code: u8) -> Option<Exit> {
        [Exit::Ok, Exit::Failed, Exit::Error, Exit::Inconclusive]
            .into_iter()
            .find(|e| e.code() == code)
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(exit: Exit) -> std::process::ExitCode {
        std::process::ExitCode::from(exit.code())
    }
}

/// In the JSON report `exit_code` is the number the process exits with.
impl Serialize for Exit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(self.code())
    }
}

impl<'de> Deserialize<'de> for Exit {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Exit, D::Error> {
        let code = u8::deserialize(d)?;
        Exit::from_code(code)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown exit code {code}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_to_exit_table() {
        for (status, strict, want) in [
            (PinStatus::Ok, false, 0),
            (PinStatus::Ok, true, 0),
            (PinStatus::Warning, false, 0),
            (PinStatus::Warning, true, 1),
            (PinStatus::Drift, false, 1),
            (PinStatus::Inconclusive, false, 3),
            (PinStatus::Inconclusive, true, 3),
        ] {
            assert_eq!(
                Exit::of_status(status, strict).code(),
                want,
                "{status:?} {strict}"
            );
        }
    }

    #[test]
    fn serialises_as_the_number() {
        for exit in [Exit::Ok, Exit::Failed, Exit::Error, Exit::Inconclusive] {
            let text = serde_json::to_string(&exit).unwrap();
            assert_eq!(text, exit.code().to_string());
            assert_eq!(serde_json::from_str::<Exit>(&text).unwrap(), exit);
        }
        assert!(serde_json::from_str::<Exit>("7").is_err());
    }
}
