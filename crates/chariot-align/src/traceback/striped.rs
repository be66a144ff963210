//! The forward pass of a traceback: the best score and the first cell in row-major
//! order holding it, scores only, in linear memory, with Farrar's striped layout over
//! the subject (lane k of vector t is column k·seg + t), one query row after another.
//!
//! The lanes are plain arrays ([`Lane`]; 16 of `i16`, 8 of `i32`) whose element-wise
//! loops the compiler turns into vector instructions: no intrinsics. The horizontal
//! gap (E, a gap in the query) is the striped dimension's dependency, resolved by
//! Farrar's lazy loop after each row; the vertical one (F) is element-wise.
//!
//! Row buffers rotate among three: the row above, the row being written, and the row
//! where the best score last grew, kept so that its first column holding the best is
//! found once, after the pass, instead of on every row where the best grows.

/// A lane's integer: `i16` (its pass gives up near `i16::MAX`, see [`forward`]) or
/// `i32`. Arithmetic wraps (plain vector adds): [`Lane::NEG`] is half the range below
/// zero, scores and gap costs are far smaller, every H is at least 0 and every E and F
/// at least minus a gap's opening once past their first cell, so nothing wraps.
pub(super) trait Lane: Copy + Ord + Default {
    /// Below every value a pass can reach from a real cell.
    const NEG: Self;
    /// a + b.
    fn add(self, b: Self) -> Self;
    /// a − b.
    fn sub(self, b: Self) -> Self;
    /// `v` when it fits.
    fn of(v: i32) -> Option<Self>;
    /// As `i32`.
    fn wide(self) -> i32;
    /// The largest best score the pass can report exactly when the largest
    /// substitution score is `top`: an H below it plus any score stays in range.
    fn limit(top: i32) -> i32;
}

impl Lane for i16 {
    const NEG: i16 = i16::MIN / 2;
    #[inline(always)]
    fn add(self, b: i16) -> i16 {
        self.wrapping_add(b)
    }
    #[inline(always)]
    fn sub(self, b: i16) -> i16 {
        self.wrapping_sub(b)
    }
    fn of(v: i32) -> Option<i16> {
        // Scores and gap costs this large leave no headroom; the i32 pass takes them.
        i16::try_from(v).ok().filter(|x| x.unsigned_abs() < 8192)
    }
    fn wide(self) -> i32 {
        i32::from(self)
    }
    fn limit(top: i32) -> i32 {
        i32::from(i16::MAX) - top.max(0)
    }
}

impl Lane for i32 {
    // A quarter of the range: subtracting gap costs along a row cannot wrap.
    const NEG: i32 = i32::MIN / 4;
    #[inline(always)]
    fn add(self, b: i32) -> i32 {
        self.wrapping_add(b)
    }
    #[inline(always)]
    fn sub(self, b: i32) -> i32 {
        self.wrapping_sub(b)
    }
    fn of(v: i32) -> Option<i32> {
        (v.unsigned_abs() < 1 << 24).then_some(v)
    }
    fn wide(self) -> i32 {
        self
    }
    fn limit(_: i32) -> i32 {
        i32::MAX
    }
}

/// The pass's memory, kept between calls (grown, never shrunk).
#[derive(Debug, Default)]
pub(super) struct Rows<T, const L: usize> {
    /// Per query letter (code mod 32), `seg` vectors of substitution scores.
    profile: Vec<[T; L]>,
    /// Three rows of H, see the module's text.
    h: [Vec<[T; L]>; 3],
    /// F of the row last written.
    f: Vec<[T; L]>,
}

#[inline(always)]
fn max<T: Lane, const L: usize>(mut a: [T; L], b: [T; L]) -> [T; L] {
    for k in 0..L {
        a[k] = a[k].max(b[k]);
    }
    a
}

#[inline(always)]
fn add<T: Lane, const L: usize>(mut a: [T; L], b: [T; L]) -> [T; L] {
    for k in 0..L {
        a[k] = a[k].add(b[k]);
    }
    a
}

#[inline(always)]
fn sub<T: Lane, const L: usize>(mut a: [T; L], b: T) -> [T; L] {
    for x in &mut a {
        *x = x.sub(b);
    }
    a
}

/// `v` moved up one lane, `fill` into lane 0 (lane k + 1's columns follow lane k's).
#[inline(always)]
fn shift<T: Lane, const L: usize>(v: [T; L], fill: T) -> [T; L] {
    let mut out = [fill; L];
    out[1..].copy_from_slice(&v[..L - 1]);
    out
}

#[inline(always)]
fn any_greater<T: Lane, const L: usize>(a: [T; L], b: [T; L]) -> bool {
    // No early exit: a plain fold over the lanes stays one vector comparison.
    a.iter().zip(&b).fold(false, |acc, (x, y)| acc | (x > y))
}

/// The best local-alignment score of `query` against `subject` (Gotoh, gap of length
/// k costing `open + k·extend`, the recurrence of [`super::align_full_matrix`]) and the
/// first cell, row-major (query rows), 0-based, holding it: `(score, row, column)`,
/// `(0, 0, 0)` when nothing scores. `None` when a value or the best does not fit `T`
/// ([`Lane::of`], [`Lane::limit`]): the caller runs the pass again with `i32`.
/// `reach[i]` becomes the largest H of rows 0 to i (the reverse pass's bound).
pub(super) fn forward<T: Lane, const L: usize>(
    query: &[u8],
    subject: &[u8],
    score: &impl Fn(u8, u8) -> i32,
    open: i32,
    extend: i32,
    rows: &mut Rows<T, L>,
    reach: &mut Vec<i32>,
) -> Option<(i32, usize, usize)> {
    reach.clear();
    let n = subject.len();
    if query.is_empty() || n == 0 {
        return Some((0, 0, 0));
    }
    let goe = T::of(open + extend)?;
    let ext = T::of(extend)?;
    let zero = T::default();
    let seg = n.div_ceil(L);
    // The profile of the query's letters only; padding columns (past the subject's
    // end, in the last lanes) score NEG, and no real cell depends on them.
    let mut present = [false; 32];
    for &c in query {
        present[usize::from(c) % 32] = true;
    }
    rows.profile.resize(32 * seg, [T::NEG; L]);
    let mut top = i32::MIN;
    for (a, _) in present.iter().enumerate().filter(|(_, &p)| p) {
        // The letter as the query holds it (codes are below 32).
        let letter = query.iter().copied().find(|&c| usize::from(c) % 32 == a).unwrap_or(a as u8);
        for (t, v) in rows.profile[a * seg..(a + 1) * seg].iter_mut().enumerate() {
            for (k, x) in v.iter_mut().enumerate() {
                let j = k * seg + t;
                *x = if j < n {
                    let s = score(letter, subject[j]);
                    top = top.max(s);
                    T::of(s)?
                } else {
                    T::NEG
                };
            }
        }
    }
    let limit = T::limit(top);
    for b in &mut rows.h {
        b.clear();
        b.resize(seg, [zero; L]);
    }
    rows.f.clear();
    rows.f.resize(seg, [T::NEG; L]);
    // Indices into rows.h: the row above, the row being written, the best's row.
    let (mut prev, mut cur, mut saved) = (0usize, 1usize, 2usize);
    let (mut best, mut bi) = (0i32, usize::MAX);
    for (i, &qi) in query.iter().enumerate() {
        let prof = &rows.profile[usize::from(qi) % 32 * seg..][..seg];
        let [h0, h1, h2] = &mut rows.h;
        let (above, here) = match (prev, cur) {
            (0, 1) => (&*h0, h1),
            (0, 2) => (&*h0, h2),
            (1, 0) => (&*h1, h0),
            (1, 2) => (&*h1, h2),
            (2, 0) => (&*h2, h0),
            _ => (&*h2, h1),
        };
        let mut e = [T::NEG; L];
        let mut diag = shift(above[seg - 1], zero);
        let mut vmax = [zero; L];
        for (((&up, p), hc), fc) in above.iter().zip(prof).zip(here.iter_mut()).zip(rows.f.iter_mut()) {
            let d = add(diag, *p);
            diag = up;
            let fv = max(sub(*fc, ext), sub(up, goe));
            *fc = fv;
            let hv = max(max(d, e), max(fv, [zero; L]));
            *hc = hv;
            vmax = max(vmax, hv);
            e = max(sub(e, ext), sub(hv, goe));
        }
        // Farrar's lazy loop: carry E across the lanes' boundaries until it can no
        // longer raise an H (nor, then, any E after it).
        e = shift(e, T::NEG);
        let mut t = 0;
        while any_greater(e, sub(here[t], goe)) {
            let hv = max(here[t], e);
            here[t] = hv;
            vmax = max(vmax, hv);
            // Lanes past their boundary hold NEG, kept from wrapping on long loops.
            e = max(sub(e, ext), [T::NEG; L]);
            t += 1;
            if t == seg {
                t = 0;
                e = shift(e, T::NEG);
            }
        }
        let row_max = vmax.iter().map(|x| x.wide()).max().unwrap_or(0);
        if row_max >= limit {
            return None;
        }
        if row_max > best {
            (best, bi, saved) = (row_max, i, cur);
        }
        reach.push(best);
        // The row just written is the next row's "above"; the next row goes to the
        // buffer that is neither it nor the best's row.
        prev = cur;
        cur = (0..3).find(|&b| b != prev && b != saved).unwrap_or(0);
    }
    if bi == usize::MAX {
        return Some((0, 0, 0));
    }
    let h = &rows.h[saved];
    let bj = (0..L)
        .flat_map(|k| (0..seg).map(move |t| (k, t)))
        .find(|&(k, t)| k * seg + t < n && h[t][k].wide() == best)
        .map(|(k, t)| k * seg + t)?;
    Some((best, bi, bj))
}
