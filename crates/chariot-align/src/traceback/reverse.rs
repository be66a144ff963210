//! The reverse pass of a traceback: from the alignment's end cell back towards the
//! sequences' starts, the top-left corner of a box that holds the alignment the
//! full-matrix traceback would report.
//!
//! The pass aligns the reversed prefixes, anchored at the end cell (its pair is the
//! first column), without a zero floor: a cell's value is the best score of a path from
//! it to the end. No such path scores above `best` (it would be a better local
//! alignment ending there), and along the reported alignment every such suffix scores
//! at least `best` minus the forward value of a cell on the alignment at or above the
//! cell's row (the prefix before the cell; inside a gap the opening is charged on the
//! suffix's side, which only raises it), so at least `best − reach[row]`, `reach` the
//! forward pass's largest H up to each row, and at least 0. So cells whose values fall
//! below that are dropped (far from the alignment, and past its start, that is nearly
//! every cell), and the pass stops at the first row where none is left; the reported alignment's first pair is a cell whose substitution value
//! equals `best`, and the box reaches the topmost row and the leftmost column of those.
//! The live cells of a row are a band, carried from row to row.

/// Below every live value.
const DEAD: i32 = i32::MIN / 4;

/// The pass's memory, kept between calls.
#[derive(Debug, Default)]
pub(super) struct Band {
    h: [Vec<i32>; 2],
    f: [Vec<i32>; 2],
}

/// The box's top-left corner `(row, column)`, 0-based, for the alignment scoring `best`
/// that ends at `(bi, bj)`, with `reach` as [`super::striped::forward`] left it, or
/// `None` once the pass has covered more than `budget` cells (the caller then takes the
/// whole prefix box). See the module's text.
#[allow(clippy::too_many_arguments)]
pub(super) fn start_corner(
    query: &[u8],
    subject: &[u8],
    score: &impl Fn(u8, u8) -> i32,
    open: i32,
    extend: i32,
    (best, bi, bj): (i32, usize, usize),
    reach: &[i32],
    budget: usize,
    band: &mut Band,
) -> Option<(usize, usize)> {
    let goe = open + extend;
    // Reversed coordinates: u = bi − row, v = bj − column.
    let width = bj + 1;
    for b in band.h.iter_mut().chain(band.f.iter_mut()) {
        b.clear();
        b.resize(width, DEAD);
    }
    let (mut umax, mut vmax) = (0usize, 0usize);
    let mut work = 0usize;
    // The previous row's live band [plo, phi]; row −1 holds only the anchor, whose
    // diagonal H is 0 at v = −1.
    let (mut plo, mut phi) = (0usize, 0usize);
    for u in 0..=bi {
        let qc = query[bi - u];
        // Below this, no cell of the row lies on the alignment.
        let floor = (best - reach.get(bi - u).copied().unwrap_or(best)).max(0);
        let (hp, hc) = band.h.split_at_mut(1);
        let (fp, fc) = band.f.split_at_mut(1);
        let (hp, hc, fp, fc) = if u % 2 == 0 {
            (&hp[0], &mut hc[0], &fp[0], &mut fc[0])
        } else {
            (&hc[0], &mut hp[0], &fc[0], &mut fp[0])
        };
        let prev_h = |v: usize| if u > 0 && (plo..=phi).contains(&v) { hp[v] } else { DEAD };
        let prev_f = |v: usize| if u > 0 && (plo..=phi).contains(&v) { fp[v] } else { DEAD };
        let (lo, reach_v) = if u == 0 { (0, 0) } else { (plo, phi + 1) };
        let mut e = DEAD;
        let mut left = DEAD;
        let (mut first, mut last) = (usize::MAX, 0usize);
        let mut v = lo;
        // Past the previous row's band only a gap in the query, opened or extended from
        // the cell to the left, can be live.
        while v < width && (v <= reach_v || (e - extend).max(left - goe) >= floor) {
            let diag = if u == 0 && v == 0 {
                0
            } else if v > 0 {
                prev_h(v - 1)
            } else {
                DEAD
            };
            let d = if diag > DEAD { diag + score(qc, subject[bj - v]) } else { DEAD };
            let live = |x: i32| if x >= floor { x } else { DEAD };
            e = live((e - extend).max(left - goe));
            let f = live((prev_f(v) - extend).max(prev_h(v) - goe));
            let d = live(d);
            let h = d.max(e).max(f);
            if d == best {
                (umax, vmax) = (umax.max(u), vmax.max(v));
            }
            hc[v] = h;
            fc[v] = f;
            if h > DEAD {
                first = first.min(v);
                last = v;
            }
            left = h;
            v += 1;
        }
        work += v - lo;
        if first == usize::MAX || work > budget {
            if work > budget {
                return None;
            }
            break;
        }
        (plo, phi) = (first, last);
    }
    Some((bi - umax, bj - vmax))
}
