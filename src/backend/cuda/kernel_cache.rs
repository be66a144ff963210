//! The on-disk cache of compiled kernels: a cubin that NVRTC made once is kept under the
//! user's cache directory and loaded again by later processes, so that a program's
//! start does not pay NVRTC's compile each time (a large kernel takes a good part of a
//! second). CUDA's own JIT cache keeps PTX compiles only, not NVRTC's.
//!
//! Where: `CHARIOT_KERNEL_CACHE` names the directory (`off` or `0` turns the cache off);
//! else `$XDG_CACHE_HOME/chariot/kernels`, else `$HOME/.cache/chariot/kernels`; with
//! neither, no cache. One file per (name, source, architecture, options, NVRTC
//! version): the file holds that key in full and the cubin with its length and a
//! checksum, so a hash collision, a truncated or a damaged file is a miss (the kernel is
//! compiled again and the file rewritten), never a wrong kernel. Files are written to a
//! temporary name and renamed, so a reader never sees half of one. Any I/O error is a
//! miss or a skipped write: the cache can only save time.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write;
use std::path::PathBuf;

const MAGIC: &[u8; 8] = b"CHARIOT1";

/// The cache directory, if there is one.
fn dir() -> Option<PathBuf> {
    match std::env::var_os("CHARIOT_KERNEL_CACHE") {
        Some(v) if v == "off" || v == "0" => return None,
        Some(v) if !v.is_empty() => return Some(PathBuf::from(v)),
        _ => {}
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("chariot").join("kernels"))
}

fn digest(bytes: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

/// A compile's identity: everything that decides its cubin.
pub(crate) struct Key(Vec<u8>);

impl Key {
    pub(crate) fn new(name: &str, source: &str, arch: &str, options: &[String], nvrtc: (i32, i32)) -> Key {
        let mut k = Vec::with_capacity(source.len() + 128);
        for part in [name, source, arch, &options.join(" "), &format!("nvrtc {}.{}", nvrtc.0, nvrtc.1)] {
            k.extend_from_slice(&(part.len() as u64).to_le_bytes());
            k.extend_from_slice(part.as_bytes());
        }
        Key(k)
    }

    fn path(&self, dir: &std::path::Path) -> PathBuf {
        dir.join(format!("{:016x}.cubin", digest(&self.0)))
    }
}

/// The cubin cached for `key`, if a whole and matching one is there.
pub(crate) fn load(key: &Key) -> Option<Vec<u8>> {
    load_from(&dir()?, key)
}

fn load_from(dir: &std::path::Path, key: &Key) -> Option<Vec<u8>> {
    let file = std::fs::read(key.path(dir)).ok()?;
    let rest = file.strip_prefix(MAGIC.as_slice())?;
    let (len, rest) = rest.split_first_chunk::<8>()?;
    let len = usize::try_from(u64::from_le_bytes(*len)).ok()?;
    let (stored, rest) = (rest.get(..len)?, rest.get(len..)?);
    if stored != key.0.as_slice() {
        return None;
    }
    let (clen, rest) = rest.split_first_chunk::<8>()?;
    let (sum, cubin) = rest.split_first_chunk::<8>()?;
    let clen = usize::try_from(u64::from_le_bytes(*clen)).ok()?;
    (cubin.len() == clen && digest(cubin) == u64::from_le_bytes(*sum)).then(|| cubin.to_vec())
}

/// Keeps `cubin` for `key` (best effort).
pub(crate) fn store(key: &Key, cubin: &[u8]) {
    if let Some(dir) = dir() {
        store_in(&dir, key, cubin);
    }
}

fn store_in(dir: &std::path::Path, key: &Key, cubin: &[u8]) {
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let path = key.path(dir);
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(MAGIC)?;
        f.write_all(&(key.0.len() as u64).to_le_bytes())?;
        f.write_all(&key.0)?;
        f.write_all(&(cubin.len() as u64).to_le_bytes())?;
        f.write_all(&digest(cubin).to_le_bytes())?;
        f.write_all(cubin)
    });
    if written.is_err() || std::fs::rename(&tmp, &path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn a_stored_cubin_comes_back_only_for_its_own_key_and_whole() {
        let dir = std::env::temp_dir().join(format!("chariot-kernel-cache-test-{}", std::process::id()));
        let key = Key::new("k", "src", "sm_90", &["--std=c++17".into()], (13, 0));
        let other = Key::new("k", "src2", "sm_90", &["--std=c++17".into()], (13, 0));
        assert_eq!(load_from(&dir, &key), None);
        store_in(&dir, &key, b"cubin bytes");
        assert_eq!(load_from(&dir, &key).as_deref(), Some(&b"cubin bytes"[..]));
        assert_eq!(load_from(&dir, &other), None);
        // A damaged file is a miss.
        let path = key.path(&dir);
        let mut bytes = std::fs::read(&path).unwrap();
        *bytes.last_mut().unwrap() ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(load_from(&dir, &key), None);
        bytes.truncate(bytes.len() - 3);
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(load_from(&dir, &key), None);
        // Another key whose file name collides (written under this key's name) is a miss.
        store_in(&dir, &other, b"other");
        std::fs::rename(other.path(&dir), &path).unwrap();
        assert_eq!(load_from(&dir, &key), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
