//! Interval arithmetic over `[start, end)` spans: the most that overlap at one instant,
//! and the length of their union.

/// The most intervals `[start, end)` that overlap at one instant, and when.
/// Empty intervals occupy no time.
pub fn max_overlap(spans: impl IntoIterator<Item = (u64, u64)>) -> (usize, u64) {
    let mut events: Vec<(u64, i32)> = Vec::new();
    for (s, e) in spans {
        if s < e {
            events.push((s, 1));
            events.push((e, -1));
        }
    }
    // Half-open intervals: at equal times, ends (-1) come before starts (+1).
    events.sort_unstable();
    let (mut now, mut best, mut at) = (0i64, 0i64, 0u64);
    for (t, d) in events {
        now += d as i64;
        if now > best {
            best = now;
            at = t;
        }
    }
    (best as usize, at)
}

/// Total length of the union of `[start, end)` intervals.
pub fn union_ns(spans: impl IntoIterator<Item = (u64, u64)>) -> u64 {
    let mut spans: Vec<(u64, u64)> = spans.into_iter().filter(|(s, e)| s < e).collect();
    spans.sort_unstable();
    let (mut total, mut cur): (u64, Option<(u64, u64)>) = (0, None);
    for (s, e) in spans {
        cur = match cur {
            Some((cs, ce)) if s <= ce => Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    total + cur.map_or(0, |(s, e)| e - s)
}
