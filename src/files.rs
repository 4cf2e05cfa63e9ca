//! Reading the files a config names (probe files, local deprecation feeds, the lock, a CA
//! bundle) as data from a checkout that may be hostile.
//!
//! A pull request can commit a symlink (`probes/env.toml -> /proc/self/environ`), a FIFO or a
//! gigabyte file; CI then runs `modelpin check` with the provider key and its own token in the
//! environment. So such a file is read only when
//! - it is a regular file on disk: no directory, FIFO, socket or device (a FIFO would block the
//!   reader forever, `/dev/zero` would fill memory), and nothing under `/proc`, `/sys` or `/dev`
//!   (kernel files that pose as regular ones and hold the environment, memory maps, keys);
//! - a path written to lie inside the project (the directory of pins.toml) resolves inside it:
//!   a symlink may lead elsewhere in the project, never out of it. A path written to lead out
//!   of the project (absolute, or with `..`) is the config's explicit choice and read as written;
//! - it is at most `cap` bytes: refused before reading when its size says so, and counted as
//!   read, so a file that grows while it is read is cut at the bound too.
//!
//! The open itself never blocks: it is made with `O_NONBLOCK` and checked again on the open
//! handle, so a file swapped for a FIFO between the check and the open is refused as well.

use std::fmt;
use std::io::Read as _;
use std::path::{Component, Path, PathBuf};

/// Kernel pseudo-filesystems: their files are no config, and some hold secrets.
const PSEUDO: [&str; 3] = ["/proc", "/sys", "/dev"];

/// Why a config-side file was not read.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// Nothing at that path (a dangling symlink included).
    Missing,
    /// Written inside the project, but it resolves to `to`, outside it.
    Outside {
        to: PathBuf,
    },
    /// A kernel file (`/proc`, `/sys`, `/dev`).
    Pseudo {
        to: PathBuf,
    },
    /// A directory, FIFO, socket or device.
    NotRegular {
        kind: &'static str,
    },
    /// More than `cap` bytes; `size` when the file said so before it was read.
    TooLarge {
        cap: u64,
        size: Option<u64>,
    },
    Io(std::io::Error),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Missing => f.write_str("no such file"),
            Refusal::Outside { to } => write!(
                f,
                "it leads out of the project directory (to {}); a symlink in the project may only lead to another place inside it",
                shown(to)
            ),
            Refusal::Pseudo { to } => {
                write!(f, "it is a kernel file ({}), not a file on disk", shown(to))
            }
            Refusal::NotRegular { kind } => write!(f, "it is a {kind}, not a regular file"),
            Refusal::TooLarge {
                cap,
                size: Some(size),
            } => write!(f, "it is {size} bytes, larger than {}", human_bytes(*cap)),
            Refusal::TooLarge { cap, size: None } => {
                write!(f, "it is larger than {}", human_bytes(*cap))
            }
            Refusal::Io(e) => write!(f, "{e}"),
        }
    }
}

impl Refusal {
    /// What a user does about it.
    pub(crate) fn help(&self) -> &'static str {
        match self {
            Refusal::Missing => {
                "check the path (relative paths start at the directory of pins.toml)"
            }
            Refusal::Outside { .. } | Refusal::Pseudo { .. } | Refusal::NotRegular { .. } => {
                "files named by the config are read only as regular files; a symlink inside the project must stay inside it; write an absolute path to read a file elsewhere"
            }
            Refusal::TooLarge { .. } => {
                "no file modelpin reads is that large: check that the path names the right file"
            }
            Refusal::Io(_) => "check the file's permissions",
        }
    }
}

/// The bytes of the file at `path`, read under the rules above. `project` is the directory of
/// pins.toml (as written; it need not be canonical).
pub(crate) fn read(path: &Path, project: &Path, cap: u64) -> Result<Vec<u8>, Refusal> {
    read_within(path, Some(project), cap)
}

/// `read` for a path that has no project (a CA bundle named in a URL): every rule but the
/// symlink one.
pub(crate) fn read_anywhere(path: &Path, cap: u64) -> Result<Vec<u8>, Refusal> {
    read_within(path, None, cap)
}

fn read_within(path: &Path, project: Option<&Path>, cap: u64) -> Result<Vec<u8>, Refusal> {
    let resolved = std::fs::canonicalize(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Refusal::Missing,
        _ => Refusal::Io(e),
    })?;
    if PSEUDO.iter().any(|p| resolved.starts_with(p)) {
        return Err(Refusal::Pseudo { to: resolved });
    }
    // pins.toml named as `pins.toml` has the project `""`: the working directory.
    let project = project.map(|p| {
        if p.as_os_str().is_empty() {
            Path::new(".")
        } else {
            p
        }
    });
    if let Some(project) = project
        && written_inside(path, project)
    {
        let root = std::fs::canonicalize(project).map_err(Refusal::Io)?;
        if !resolved.starts_with(&root) {
            return Err(Refusal::Outside { to: resolved });
        }
    }
    let meta = std::fs::metadata(&resolved).map_err(Refusal::Io)?;
    regular(&meta)?;
    if meta.len() > cap {
        return Err(Refusal::TooLarge {
            cap,
            size: Some(meta.len()),
        });
    }
    let file = open_nonblocking(&resolved).map_err(Refusal::Io)?;
    // The handle's own type: the path may have been swapped since the check above.
    regular(&file.metadata().map_err(Refusal::Io)?)?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len().min(cap)).unwrap_or(0));
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(Refusal::Io)?;
    if bytes.len() as u64 > cap {
        return Err(Refusal::TooLarge { cap, size: None });
    }
    Ok(bytes)
}

fn regular(meta: &std::fs::Metadata) -> Result<(), Refusal> {
    let kind = meta.file_type();
    if kind.is_file() {
        return Ok(());
    }
    Err(Refusal::NotRegular {
        kind: describe(kind),
    })
}

fn describe(kind: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if kind.is_fifo() {
            return "FIFO";
        }
        if kind.is_socket() {
            return "socket";
        }
        if kind.is_char_device() || kind.is_block_device() {
            return "device";
        }
    }
    if kind.is_dir() {
        "directory"
    } else {
        "special file"
    }
}

fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    options.open(path)
}

/// Whether `path`, read as written (`.` and `..` undone without following symlinks), lies
/// inside `project`.
fn written_inside(path: &Path, project: &Path) -> bool {
    let absolute = |p: &Path| {
        if p.is_absolute() {
            Some(p.to_path_buf())
        } else {
            std::env::current_dir().ok().map(|cwd| cwd.join(p))
        }
    };
    match (absolute(path), absolute(project)) {
        (Some(path), Some(project)) => lexical(&path).starts_with(lexical(&project)),
        // No working directory to resolve against: held to the stricter rule.
        _ => true,
    }
}

fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// A path as a diagnostic shows it: bounded, since a symlink's target is the checkout's to choose.
fn shown(path: &Path) -> String {
    crate::text::bounded_owned(path.display().to_string(), 160)
}

fn human_bytes(n: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::symlink;
    use std::path::Path;

    use super::{Refusal, read};

    const CAP: u64 = 64;

    fn outcome(path: &Path, project: &Path) -> String {
        match read(path, project, CAP) {
            Ok(bytes) => format!("ok {}", bytes.len()),
            Err(Refusal::Missing) => "missing".into(),
            Err(Refusal::Outside { .. }) => "outside".into(),
            Err(Refusal::Pseudo { .. }) => "pseudo".into(),
            Err(Refusal::NotRegular { kind }) => format!("not regular: {kind}"),
            Err(Refusal::TooLarge { .. }) => "too large".into(),
            Err(Refusal::Io(e)) => format!("io {e}"),
        }
    }

    #[test]
    fn reads_only_regular_files_where_their_path_says() {
        let root = tempfile::tempdir().unwrap();
        let project = root.path().join("project");
        let elsewhere = root.path().join("elsewhere");
        std::fs::create_dir_all(project.join("probes")).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(project.join("probes/a.toml"), "id = 1").unwrap();
        std::fs::write(elsewhere.join("b.toml"), "id = 2").unwrap();
        std::fs::write(project.join("big"), vec![b'x'; CAP as usize + 1]).unwrap();
        std::fs::write(project.join("exact"), vec![b'x'; CAP as usize]).unwrap();
        symlink(project.join("probes/a.toml"), project.join("inner-link")).unwrap();
        symlink(elsewhere.join("b.toml"), project.join("probes/out.toml")).unwrap();
        symlink(&elsewhere, project.join("linked-dir")).unwrap();
        symlink("/proc/self/environ", project.join("env.toml")).unwrap();
        symlink("/dev/zero", project.join("zero.toml")).unwrap();
        symlink(project.join("nothing"), project.join("dangling")).unwrap();
        let fifo = project.join("fifo.toml");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());

        let cases: [(&Path, &str); 13] = [
            (&project.join("probes/a.toml"), "ok 6"),
            (&project.join("exact"), "ok 64"),
            (&project.join("big"), "too large"),
            (&project.join("inner-link"), "ok 6"),
            (&project.join("probes/out.toml"), "outside"),
            (&project.join("linked-dir/b.toml"), "outside"),
            (&project.join("probes/../../elsewhere/b.toml"), "ok 6"),
            (&elsewhere.join("b.toml"), "ok 6"),
            (&project.join("env.toml"), "pseudo"),
            (&project.join("zero.toml"), "pseudo"),
            (&project.join("dangling"), "missing"),
            (&fifo, "not regular: FIFO"),
            (&project.join("probes"), "not regular: directory"),
        ];
        for (path, want) in cases {
            assert_eq!(outcome(path, &project), want, "{}", path.display());
        }
        assert_eq!(outcome(Path::new("/proc/self/environ"), &project), "pseudo");
    }
}
