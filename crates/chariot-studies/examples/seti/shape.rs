//! One configuration of the pipelined runs (`--streams`): chariot's defaults or S, depth
//! and kernel concurrency set by hand, and the scheduler builder it gives.

/// One configuration of the pipelined runs: chariot's defaults (`auto`), or S and,
/// where given, the stage depth and the kernel concurrency set by hand.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Shape {
    pub(crate) streams: Option<usize>,
    pub(crate) depth: Option<usize>,
    pub(crate) kernels: Option<usize>,
    /// The kernel stage's capacity in GPU-fills (`Builder::kernel_fills`).
    pub(crate) fills: Option<f64>,
}

impl Shape {
    pub(crate) const AUTO: Shape = Shape { streams: None, depth: None, kernels: None, fills: None };

    /// S streams, the rest chosen by chariot.
    pub(crate) fn streams(s: usize) -> Shape {
        Shape { streams: Some(s), ..Shape::AUTO }
    }

    /// This shape with `depth` where it gives none.
    pub(crate) fn or_depth(self, depth: Option<usize>) -> Shape {
        Shape { depth: self.depth.or(depth), ..self }
    }

    /// `auto`, `S4`, `S4 d2`, `S4 d2 k1`.
    pub(crate) fn name(&self) -> String {
        let Some(s) = self.streams else { return "auto".into() };
        let mut name = format!("S{s}");
        if let Some(d) = self.depth {
            name += &format!(" d{d}");
        }
        if let Some(k) = self.kernels {
            name += &format!(" k{k}");
        }
        if let Some(f) = self.fills {
            name += &format!(" f{f}");
        }
        name
    }

    pub(crate) fn builder(&self, mut b: chariot::Builder) -> chariot::Builder {
        if let Some(s) = self.streams {
            b = b.streams(s);
        }
        if let Some(d) = self.depth {
            b = b.stage_depth(d);
        }
        if let Some(k) = self.kernels {
            b = b.kernel_concurrency(k);
        }
        if let Some(f) = self.fills {
            b = b.kernel_fills(f);
        }
        // Set by hand throughout: no adaptation.
        if self.streams.is_some() && self.depth.is_some() && (self.kernels.is_some() || self.fills.is_some()) {
            b = b.adapt(false);
        }
        b
    }
}

impl std::str::FromStr for Shape {
    type Err = String;

    fn from_str(text: &str) -> Result<Shape, String> {
        if text == "auto" {
            return Ok(Shape::AUTO);
        }
        let parts: Vec<&str> = text.split(':').collect();
        let number = |p: &str| {
            p.parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("`{text}`: `{p}` is not a positive number (auto or S[:DEPTH[:KERNELS]])"))
        };
        if parts.len() > 3 {
            return Err(format!("`{text}`: at most S:DEPTH:KERNELS"));
        }
        // The third part: a kernel count (`4` or `k4`) or GPU-fills (`f2`, `f0.5`).
        let (mut kernels, mut fills) = (None, None);
        match parts.get(2) {
            Some(p) if p.starts_with('f') => {
                let f = p[1..].parse::<f64>().ok().filter(|f| f.is_finite() && *f > 0.0);
                fills = Some(f.ok_or_else(|| format!("`{text}`: `{p}` is not f and a positive number of fills"))?);
            }
            Some(p) => kernels = Some(number(p.trim_start_matches('k'))?),
            None => {}
        }
        Ok(Shape {
            streams: Some(number(parts[0])?),
            depth: parts.get(1).map(|p| number(p)).transpose()?,
            kernels,
            fills,
        })
    }
}
