//! How the tool says it failed, in one place: `error: ` and what went wrong, a `= note:` line
//! for each thing known about it, and `= help:` with what to do. Errors keep their message in
//! `Display` (as logs and the store want it) and say the rest through `Explain`.

use std::fmt;

/// A tool error as the user reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub message: String,
    pub notes: Vec<String>,
    pub help: Option<String>,
}

impl Problem {
    #[must_use]
    pub fn new(message: impl Into<String>) -> Problem {
        Problem {
            message: message.into(),
            notes: Vec::new(),
            help: None,
        }
    }

    #[must_use]
    pub fn note(mut self, note: impl Into<String>) -> Problem {
        self.notes.push(note.into());
        self
    }

    #[must_use]
    pub fn help(mut self, help: impl Into<String>) -> Problem {
        self.help = Some(help.into());
        self
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: {}", self.message)?;
        for note in &self.notes {
            write!(f, "\n  = note: {note}")?;
        }
        if let Some(help) = &self.help {
            write!(f, "\n  = help: {help}")?;
        }
        Ok(())
    }
}

/// What an error says besides its message: what to do about it, when that is known.
pub trait Explain: fmt::Display {
    fn help(&self) -> Option<String> {
        None
    }

    fn problem(&self) -> Problem {
        Problem {
            message: self.to_string(),
            notes: Vec::new(),
            help: self.help(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Problem;

    #[test]
    fn the_message_then_each_note_then_the_help_each_on_its_own_line() {
        let table = [
            (Problem::new("no pins"), "error: no pins"),
            (
                Problem::new("no pins").help("add one"),
                "error: no pins\n  = help: add one",
            ),
            (
                Problem::new("lock unreadable")
                    .note("a")
                    .note("b")
                    .help("fix it"),
                "error: lock unreadable\n  = note: a\n  = note: b\n  = help: fix it",
            ),
        ];
        for (problem, shown) in table {
            assert_eq!(problem.to_string(), shown);
        }
    }
}
