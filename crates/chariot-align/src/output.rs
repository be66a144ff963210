//! Every file a command writes, made safely: one module that every subcommand's output
//! goes through, so that no run harms a file the user gave it.
//!
//! * An output that is one of the run's inputs (the same file by its (device, inode),
//!   through a symlink or a hard link too, or the same canonical path) is refused before
//!   anything is read, naming both flags and the path ([`check_distinct`]); so are two
//!   outputs naming one file.
//! * An output is written beside its target as `<target>.partial` and renamed over the
//!   target only when complete ([`Output::commit`]), and only over a regular file or a
//!   missing path: a symlink, a FIFO, a device, a directory or a socket there is an error
//!   naming the path and its kind ([`check_target`]), never replaced.
//! * Every output is created (its `.partial`) before the command's work begins, so a bad
//!   path fails at once, and the `.partial` is removed on every failure path (dropping an
//!   [`Output`] that was not committed removes it).

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// The file a target is written as before the rename.
pub fn partial_path(target: &Path) -> PathBuf {
    let mut s = target.as_os_str().to_owned();
    s.push(".partial");
    PathBuf::from(s)
}

/// The kind of a file that is no regular file, in words (`None`: a regular file).
fn odd_kind(m: &fs::Metadata) -> Option<&'static str> {
    let t = m.file_type();
    if t.is_file() {
        return None;
    }
    if t.is_symlink() {
        return Some("symbolic link");
    }
    if t.is_dir() {
        return Some("directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return Some("FIFO (named pipe)");
        }
        if t.is_char_device() {
            return Some("character device");
        }
        if t.is_block_device() {
            return Some("block device");
        }
        if t.is_socket() {
            return Some("socket");
        }
    }
    Some("special file")
}

/// Checks that `path` (the value of `flag`) is a regular file or missing: what an
/// output may be renamed over.
///
/// # Errors
/// Anything else there, naming the flag, the path and its kind.
pub fn check_target(flag: &str, path: &Path) -> Result<(), String> {
    match fs::symlink_metadata(path) {
        Ok(m) => match odd_kind(&m) {
            None => Ok(()),
            Some(kind) => Err(format!(
                "{flag} {}: is a {kind}; an output is written as `<path>.partial` and renamed over the path, \
                 only over a regular file or a missing path; name another path",
                path.display()
            )),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("{flag} {}: {e}", path.display())),
    }
}

/// Whether two paths name one file: by (device, inode) where both exist (following
/// symlinks, so a link to a file is that file), else by canonical path (a missing file
/// by its folder's canonical path and its name).
pub fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(x), Ok(y)) = (fs::metadata(a), fs::metadata(b)) {
            return (x.dev(), x.ino()) == (y.dev(), y.ino());
        }
    }
    match (canonical(a), canonical(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// The canonical path of `p`, or of its folder joined with its name when `p` is missing.
fn canonical(p: &Path) -> Option<PathBuf> {
    if let Ok(c) = fs::canonicalize(p) {
        return Some(c);
    }
    let name = p.file_name()?;
    let parent = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    Some(fs::canonicalize(parent).ok()?.join(name))
}

/// Refuses an output (`outputs`: flag and path) that is one of the `inputs` (or whose
/// `.partial` is), or that another output names too.
///
/// # Errors
/// The first such pair, naming both flags and the path.
pub fn check_distinct(inputs: &[(&str, &Path)], outputs: &[(&str, &Path)]) -> Result<(), String> {
    for (k, &(oflag, out)) in outputs.iter().enumerate() {
        for &(iflag, input) in inputs {
            if same_file(out, input) {
                return Err(format!(
                    "{oflag} {} is the same file as {iflag} {}: writing it would destroy that input; name another output",
                    out.display(),
                    input.display()
                ));
            }
            let partial = partial_path(out);
            if same_file(&partial, input) {
                return Err(format!(
                    "{oflag} {} is written first as {}, which is {iflag} {}: that would destroy the input; name another output",
                    out.display(),
                    partial.display(),
                    input.display()
                ));
            }
        }
        for &(other_flag, other) in &outputs[..k] {
            let clash =
                same_file(out, other) || same_file(&partial_path(out), other) || same_file(out, &partial_path(other));
            if clash {
                return Err(format!(
                    "{other_flag} {} and {oflag} {} name the same file (or one's `.partial`): each output needs a file of its own",
                    other.display(),
                    out.display()
                ));
            }
        }
    }
    Ok(())
}

/// An output being written: its `.partial`, renamed over the target by [`Output::commit`],
/// removed if dropped before.
#[derive(Debug)]
pub struct Output {
    flag: String,
    target: PathBuf,
    partial: PathBuf,
    file: Option<BufWriter<File>>,
}

impl Output {
    /// Checks the target ([`check_target`]) and creates its `.partial` (a regular file
    /// left there by an earlier run is replaced; anything else there is an error).
    ///
    /// # Errors
    /// A target or `.partial` that is no regular file, or a `.partial` that cannot be
    /// created (a missing folder, no permission), naming the flag and the path.
    pub fn create(flag: &str, target: &Path) -> Result<Output, String> {
        check_target(flag, target)?;
        let partial = partial_path(target);
        match fs::symlink_metadata(&partial) {
            Ok(m) => match odd_kind(&m) {
                None => fs::remove_file(&partial)
                    .map_err(|e| format!("{flag} {}: cannot remove the old {}: {e}", target.display(), partial.display()))?,
                Some(kind) => {
                    return Err(format!(
                        "{flag} {}: {} (where the output is written before its rename) is a {kind}; remove it or name another path",
                        target.display(),
                        partial.display()
                    ))
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("{flag} {}: {e}", partial.display())),
        }
        let f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&partial)
            .map_err(|e| format!("{flag} {}: cannot create {}: {e}", target.display(), partial.display()))?;
        Ok(Output {
            flag: flag.to_string(),
            target: target.to_path_buf(),
            partial,
            file: Some(BufWriter::with_capacity(1 << 20, f)),
        })
    }

    /// The target path.
    pub fn path(&self) -> &Path {
        &self.target
    }

    /// Flushes and syncs the `.partial` and renames it over the target (checked again:
    /// only a regular file or a missing path is replaced).
    ///
    /// # Errors
    /// A write error, or a target that became something else meanwhile; the `.partial`
    /// is then removed.
    pub fn commit(mut self) -> Result<(), String> {
        let w = self.file.take().expect("an output is committed once");
        let f = w.into_inner().map_err(|e| self.write_error(e.error()))?;
        f.sync_all().map_err(|e| self.write_error(&e))?;
        drop(f);
        check_target(&self.flag, &self.target)?;
        fs::rename(&self.partial, &self.target).map_err(|e| {
            format!("{} {}: cannot rename {} over it: {e}", self.flag, self.target.display(), self.partial.display())
        })?;
        // Renamed: nothing is left to remove.
        self.partial = PathBuf::new();
        Ok(())
    }

    fn write_error(&self, e: &std::io::Error) -> String {
        format!("{} {}: cannot write {}: {e}", self.flag, self.target.display(), self.partial.display())
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.as_mut().expect("not committed").write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.file.as_mut().expect("not committed").write_all(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.file.as_mut().expect("not committed").flush()
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if !self.partial.as_os_str().is_empty() {
            drop(self.file.take());
            let _ = fs::remove_file(&self.partial);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("chariot-align-output-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    /// Same file by inode through links, and by canonical path when missing.
    #[test]
    fn same_file_sees_through_links() {
        let d = dir("same");
        let a = d.join("a.fa");
        fs::write(&a, ">x\nA\n").unwrap();
        fs::hard_link(&a, d.join("hard.fa")).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&a, d.join("soft.fa")).unwrap();
        assert!(same_file(&a, &d.join("hard.fa")));
        #[cfg(unix)]
        assert!(same_file(&a, &d.join("soft.fa")));
        assert!(same_file(&a, &d.join(".").join("a.fa")));
        assert!(same_file(&d.join("missing"), &d.join("..").join(d.file_name().unwrap()).join("missing")));
        assert!(!same_file(&a, &d.join("missing")));
        let e = check_distinct(&[("-d", &a)], &[("-o", &d.join("hard.fa"))]).unwrap_err();
        assert!(e.contains("-o") && e.contains("-d") && e.contains("hard.fa") && e.contains("a.fa"), "{e}");
        let e = check_distinct(&[("-q", &d.join("x.partial"))], &[("-o", &d.join("x"))]).unwrap_err();
        assert!(e.contains("x.partial"), "{e}");
        let e = check_distinct(&[], &[("-o", &d.join("o")), ("--tabular", &d.join("o"))]).unwrap_err();
        assert!(e.contains("-o") && e.contains("--tabular"), "{e}");
        let e = check_distinct(&[], &[("-o", &d.join("o")), ("--tabular", &d.join("o.partial"))]).unwrap_err();
        assert!(e.contains("`.partial`"), "{e}");
        fs::remove_dir_all(&d).ok();
    }

    /// A committed output replaces a regular file; a dropped one leaves nothing; odd
    /// targets are refused and left as they were.
    #[test]
    fn outputs_are_renamed_only_over_regular_files() {
        let d = dir("targets");
        let t = d.join("out.tsv");
        fs::write(&t, "old").unwrap();
        let mut o = Output::create("-o", &t).unwrap();
        assert!(partial_path(&t).exists());
        o.write_all(b"new").unwrap();
        o.commit().unwrap();
        assert_eq!(fs::read_to_string(&t).unwrap(), "new");
        assert!(!partial_path(&t).exists());
        let o = Output::create("-o", &t).unwrap();
        drop(o);
        assert!(!partial_path(&t).exists(), "a dropped output removes its .partial");
        assert_eq!(fs::read_to_string(&t).unwrap(), "new");
        let e = Output::create("-o", &d).unwrap_err();
        assert!(e.contains("directory"), "{e}");
        #[cfg(unix)]
        {
            let link = d.join("link");
            std::os::unix::fs::symlink(&t, &link).unwrap();
            let e = Output::create("--tabular", &link).unwrap_err();
            assert!(e.contains("--tabular") && e.contains("symbolic link") && e.contains("link"), "{e}");
            assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
            let e = Output::create("-o", Path::new("/dev/null")).unwrap_err();
            assert!(e.contains("character device"), "{e}");
        }
        let e = Output::create("-o", &d.join("no-such-folder").join("x")).unwrap_err();
        assert!(e.contains("cannot create") && e.contains("no-such-folder"), "{e}");
        fs::remove_dir_all(&d).ok();
    }
}
