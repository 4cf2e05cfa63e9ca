//! sled 0.34 panics on some damage it meets instead of returning an error (`expect`s in its
//! recovery and page reads), and a panic on the blocking pool would end the command with exit
//! 101 and a backtrace. Every call into sled runs inside `caught`: the panic becomes the store's
//! "damaged" error, and the process's panic hook stays quiet for it (the error says what to do;
//! the hook's text would only repeat it without the advice). Panics anywhere else still reach
//! the hook as before.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

thread_local! {
    /// Set while this thread runs a call into sled.
    static CATCHING: Cell<bool> = const { Cell::new(false) };
    /// Where the last caught panic happened, from the hook.
    static WHERE: RefCell<Option<String>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

/// Runs `call`; a panic inside it is `Err` with its message and place.
pub(super) fn caught<T>(call: impl FnOnce() -> T) -> Result<T, String> {
    install_hook();
    let was = CATCHING.with(|c| c.replace(true));
    let outcome = catch_unwind(AssertUnwindSafe(call));
    CATCHING.with(|c| c.set(was));
    outcome.map_err(|payload| {
        let place = WHERE.with(|w| w.borrow_mut().take());
        let text = message(payload.as_ref());
        match place {
            Some(place) => format!("sled failed: {text} (at {place})"),
            None => format!("sled failed: {text}"),
        }
    })
}

/// Wraps the process's hook once: silent (noting the place) inside `caught`, unchanged outside.
fn install_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if CATCHING.with(Cell::get) {
                let place = info.location().map(ToString::to_string);
                WHERE.with(|w| *w.borrow_mut() = place);
            } else {
                previous(info);
            }
        }));
    });
}

fn message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "an unexplained failure".to_owned())
}

#[cfg(test)]
mod tests {
    use super::caught;

    #[test]
    fn a_panic_inside_becomes_its_message_and_place() {
        assert_eq!(caught(|| 7), Ok(7));
        let err = caught(|| -> u8 { panic!("page {} unreadable", 3) }).unwrap_err();
        assert!(
            err.starts_with("sled failed: page 3 unreadable (at "),
            "{err}"
        );
        assert!(err.contains("unwind.rs"), "{err}");
    }
}
