//! Composition-based statistics as BLAST+ computes them with `-comp_based_stats 1`
//! (Schäffer et al. 2001, NCBI's `composition_adjustment`): for each query–subject pair,
//! the ungapped λ of BLOSUM62 is recomputed for the two sequences' own residue
//! compositions, and the pair is aligned again with BLOSUM62 rescaled by the ratio
//! of that λ to the standard one (never above 1, never below ½).
//!
//! As NCBI does it:
//! - the matrix is built from BLOSUM62's frequency ratios (NCBI's table, the NCBIstdaa
//!   alphabet) at 32 times the precision of the integer matrix ([`SCALE`]): score
//!   = round(ln(ratio) / (λ_u / 32)), λ_u the ungapped λ of the integer BLOSUM62 for
//!   Robinson & Robinson's residue frequencies (BLAST's `kbp_ideal`);
//! - a composition counts the 20 true amino acids only (B, Z, X, `*` are left out);
//! - the pair's λ solves Σ p_q(a)·p_s(b)·e^(λ·M(a, b)) = 1 over that scaled matrix by
//!   BLAST's own Newton–bisection (`NlmKarlinLambdaNR`, accuracy 1e-5), started at λ_u/32;
//! - the rescaled matrix is round(ln(ratio) / (λ_u / (32·r))), r the λ ratio; X
//!   scores are the composition-weighted mean of the row (column), at most −1; U and O
//!   score as X; `*` keeps the unadjusted score;
//! - the alignment is redone with that matrix and gap costs times 32; its E-value is
//!   computed from the scaled score (score / 32, unrounded), its reported raw score is
//!   the scaled score / 32 rounded, and its bit score comes from that rounded score.

use crate::matrix::{Matrix, MAX_LETTERS};

/// The precision factor of the rescaled matrices (NCBI's `SCALING_FACTOR`).
pub const SCALE: i32 = 32;

/// The NCBIstdaa alphabet, in the order of [`FREQ_RATIOS`].
const NCBI: &[u8; 28] = b"-ABCDEFGHIKLMNPQRSTVWXYZU*OJ";
/// NCBIstdaa indices of the 20 true amino acids.
const TRUE_AA: [usize; 20] = [1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 22];
const B: usize = 2;
const X: usize = 21;
const Z: usize = 23;
const U: usize = 24;
const STOP: usize = 25;
const O: usize = 26;
const J: usize = 27;
/// The score given to a frequency ratio of 0 (NCBI's `COMPO_SCORE_MIN`).
const SCORE_MIN: f64 = -128.0;
/// The largest X score of a rescaled matrix (NCBI's `kMaximumXscore`).
const MAX_X_SCORE: f64 = -1.0;
/// The smallest λ ratio (NCBI's `LambdaRatioLowerBound`).
const RATIO_MIN: f64 = 0.5;

/// Robinson & Robinson (1991) residue frequencies, BLAST's standard composition.
const ROBINSON: [(u8, f64); 20] = [
    (b'A', 0.07805),
    (b'C', 0.01925),
    (b'D', 0.05364),
    (b'E', 0.06295),
    (b'F', 0.03856),
    (b'G', 0.07377),
    (b'H', 0.02199),
    (b'I', 0.05142),
    (b'K', 0.05744),
    (b'L', 0.09019),
    (b'M', 0.02243),
    (b'N', 0.04487),
    (b'P', 0.05203),
    (b'Q', 0.04264),
    (b'R', 0.05129),
    (b'S', 0.07120),
    (b'T', 0.05841),
    (b'V', 0.06441),
    (b'W', 0.01330),
    (b'Y', 0.03216),
];

/// BLOSUM62's frequency ratios (NCBI's `BLOSUM62_FREQRATIOS`, NCBIstdaa order): the
/// data the integer matrix was rounded from.
#[rustfmt::skip]
const FREQ_RATIOS: [[f64; 28]; 28] = [
    [0.00000000e+00, 0.00000000e+00, 0.00000000e+00, 0.00000000e+00, 0.00000000e+00, 0.00000000e+00, 0.00000000e+00, 0.00000000e+00, 0.00000000e+00, 0.00000000e+00, 0.00000000e+00, 0.00000000e+00, 0.00000000e+00, 0.00000000e+00, 0.00000000e+00, 0.00000000e+00, 0.00000000e+00, 0.00000000e+00, 0.00000000e+00, 0.00000000e+00, 0.00000000e+00, 0.00000000e+00, 0.00000000e+00, 0.00000000e+00, 0.00000000e+00, 0.00000000e+00, 0.00000000e+00, 0.00000000e+00],
    [0.00000000e+00, 3.90294070e+00, 5.64459671e-01, 8.67987664e-01, 5.44605275e-01, 7.41264113e-01, 4.64893827e-01, 1.05686961e+00, 5.69364849e-01, 6.32481035e-01, 7.75390239e-01, 6.01945975e-01, 7.23150342e-01, 5.88307640e-01, 7.54121369e-01, 7.56803943e-01, 6.12698600e-01, 1.47210399e+00, 9.84401956e-01, 9.36458396e-01, 4.16548781e-01, 7.50000000e-01, 5.42611869e-01, 7.47274948e-01, 7.50000000e-01, 2.50000000e-01, 7.50000000e-01, 6.14377313e-01],
    [0.00000000e+00, 5.64459671e-01, 4.43758048e+00, 3.45226274e-01, 4.74290926e+00, 1.33503378e+00, 3.24101420e-01, 7.38524318e-01, 9.25449581e-01, 3.33981361e-01, 8.54849426e-01, 2.97257620e-01, 4.04640322e-01, 4.07083696e+00, 5.53838329e-01, 9.44103648e-01, 7.02873767e-01, 1.05798620e+00, 8.26250098e-01, 3.51280513e-01, 2.52855433e-01, 7.50000000e-01, 4.09444638e-01, 1.18382127e+00, 7.50000000e-01, 2.50000000e-01, 7.50000000e-01, 3.12208474e-01],
    [0.00000000e+00, 8.67987664e-01, 3.45226274e-01, 1.95765857e+01, 3.01454345e-01, 2.85934574e-01, 4.38990118e-01, 4.20387870e-01, 3.55049505e-01, 6.53458801e-01, 3.49128465e-01, 6.42275633e-01, 6.11354340e-01, 3.97802620e-01, 3.79562691e-01, 3.65781531e-01, 3.08939296e-01, 7.38415701e-01, 7.40551692e-01, 7.55844055e-01, 4.49983903e-01, 7.50000000e-01, 4.34203398e-01, 3.16819526e-01, 7.50000000e-01, 2.50000000e-01, 7.50000000e-01, 6.46828489e-01],
    [0.00000000e+00, 5.44605275e-01, 4.74290926e+00, 3.01454345e-01, 7.39792738e+00, 1.68781075e+00, 2.98969081e-01, 6.34301019e-01, 6.78558839e-01, 3.39015407e-01, 7.84090406e-01, 2.86613046e-01, 3.46454634e-01, 1.55385281e+00, 5.98716826e-01, 8.97081129e-01, 5.73200024e-01, 9.13504624e-01, 6.94789868e-01, 3.36500142e-01, 2.32102315e-01, 7.50000000e-01, 3.45683565e-01, 1.38195506e+00, 7.50000000e-01, 2.50000000e-01, 7.50000000e-01, 3.07946931e-01],
    [0.00000000e+00, 7.41264113e-01, 1.33503378e+00, 2.85934574e-01, 1.68781075e+00, 5.46952608e+00, 3.30743991e-01, 4.81267655e-01, 9.60040718e-01, 3.30522558e-01, 1.30827885e+00, 3.72873704e-01, 5.00342289e-01, 9.11298183e-01, 6.79202587e-01, 1.90173784e+00, 9.60797602e-01, 9.50357185e-01, 7.41425610e-01, 4.28943130e-01, 3.74300212e-01, 7.50000000e-01, 4.96467354e-01, 4.08949895e+00, 7.50000000e-01, 2.50000000e-01, 7.50000000e-01, 3.55631838e-01],
    [0.00000000e+00, 4.64893827e-01, 3.24101420e-01, 4.38990118e-01, 2.98969081e-01, 3.30743991e-01, 8.12879702e+00, 3.40640908e-01, 6.51990521e-01, 9.45769883e-01, 3.44043119e-01, 1.15459749e+00, 1.00437163e+00, 3.54288952e-01, 2.87444758e-01, 3.33972402e-01, 3.80726330e-01, 4.39973597e-01, 4.81693683e-01, 7.45089738e-01, 1.37437942e+00, 7.50000000e-01, 2.76938063e+00, 3.31992746e-01, 7.50000000e-01, 2.50000000e-01, 7.50000000e-01, 1.06958025e+00],
    [0.00000000e+00, 1.05686961e+00, 7.38524318e-01, 4.20387870e-01, 6.34301019e-01, 4.81267655e-01, 3.40640908e-01, 6.87630691e+00, 4.92966576e-01, 2.75009722e-01, 5.88871736e-01, 2.84504012e-01, 3.95486600e-01, 8.63711406e-01, 4.77385507e-01, 5.38649627e-01, 4.49983999e-01, 9.03596525e-01, 5.79271582e-01, 3.36954912e-01, 4.21690355e-01, 7.50000000e-01, 3.48714366e-01, 5.03463109e-01, 7.50000000e-01, 2.50000000e-01, 7.50000000e-01, 2.80638726e-01],
    [0.00000000e+00, 5.69364849e-01, 9.25449581e-01, 3.55049505e-01, 6.78558839e-01, 9.60040718e-01, 6.51990521e-01, 4.92966576e-01, 1.35059997e+01, 3.26288125e-01, 7.78887490e-01, 3.80675486e-01, 5.84132623e-01, 1.22200067e+00, 4.72879831e-01, 1.16798104e+00, 9.17048021e-01, 7.36731740e-01, 5.57503254e-01, 3.39447442e-01, 4.44088955e-01, 7.50000000e-01, 1.79790413e+00, 1.04047242e+00, 7.50000000e-01, 2.50000000e-01, 7.50000000e-01, 3.58533474e-01],
    [0.00000000e+00, 6.32481035e-01, 3.33981361e-01, 6.53458801e-01, 3.39015407e-01, 3.30522558e-01, 9.45769883e-01, 2.75009722e-01, 3.26288125e-01, 3.99792994e+00, 3.96372934e-01, 1.69443475e+00, 1.47774450e+00, 3.27934752e-01, 3.84662860e-01, 3.82937802e-01, 3.54751311e-01, 4.43163582e-01, 7.79816110e-01, 2.41751209e+00, 4.08874390e-01, 7.50000000e-01, 6.30388931e-01, 3.50796872e-01, 7.50000000e-01, 2.50000000e-01, 7.50000000e-01, 2.63222650e+00],
    [0.00000000e+00, 7.75390239e-01, 8.54849426e-01, 3.49128465e-01, 7.84090406e-01, 1.30827885e+00, 3.44043119e-01, 5.88871736e-01, 7.78887490e-01, 3.96372934e-01, 4.76433717e+00, 4.28270363e-01, 6.25302816e-01, 9.39841129e-01, 7.03774479e-01, 1.55432308e+00, 2.07680867e+00, 9.31919141e-01, 7.92905803e-01, 4.56542720e-01, 3.58930071e-01, 7.50000000e-01, 5.32179333e-01, 1.40344922e+00, 7.50000000e-01, 2.50000000e-01, 7.50000000e-01, 4.15284382e-01],
    [0.00000000e+00, 6.01945975e-01, 2.97257620e-01, 6.42275633e-01, 2.86613046e-01, 3.72873704e-01, 1.15459749e+00, 2.84504012e-01, 3.80675486e-01, 1.69443475e+00, 4.28270363e-01, 3.79662137e+00, 1.99429557e+00, 3.10043276e-01, 3.71121724e-01, 4.77325586e-01, 4.73919278e-01, 4.28893743e-01, 6.60328975e-01, 1.31423573e+00, 5.68037074e-01, 7.50000000e-01, 6.92059423e-01, 4.13275887e-01, 7.50000000e-01, 2.50000000e-01, 7.50000000e-01, 2.94078574e+00],
    [0.00000000e+00, 7.23150342e-01, 4.04640322e-01, 6.11354340e-01, 3.46454634e-01, 5.00342289e-01, 1.00437163e+00, 3.95486600e-01, 5.84132623e-01, 1.47774450e+00, 6.25302816e-01, 1.99429557e+00, 6.48145121e+00, 4.74529655e-01, 4.23898024e-01, 8.64250293e-01, 6.22623369e-01, 5.98558924e-01, 7.93801616e-01, 1.26893679e+00, 6.10296214e-01, 7.50000000e-01, 7.08364628e-01, 6.41102583e-01, 7.50000000e-01, 2.50000000e-01, 7.50000000e-01, 1.78399892e+00],
    [0.00000000e+00, 5.88307640e-01, 4.07083696e+00, 3.97802620e-01, 1.55385281e+00, 9.11298183e-01, 3.54288952e-01, 8.63711406e-01, 1.22200067e+00, 3.27934752e-01, 9.39841129e-01, 3.10043276e-01, 4.74529655e-01, 7.09409488e+00, 4.99932836e-01, 1.00058442e+00, 8.58630478e-01, 1.23152924e+00, 9.84152635e-01, 3.69033853e-01, 2.77782896e-01, 7.50000000e-01, 4.86030806e-01, 9.45834265e-01, 7.50000000e-01, 2.50000000e-01, 7.50000000e-01, 3.17327197e-01],
    [0.00000000e+00, 7.54121369e-01, 5.53838329e-01, 3.79562691e-01, 5.98716826e-01, 6.79202587e-01, 2.87444758e-01, 4.77385507e-01, 4.72879831e-01, 3.84662860e-01, 7.03774479e-01, 3.71121724e-01, 4.23898024e-01, 4.99932836e-01, 1.28375437e+01, 6.41280589e-01, 4.81534905e-01, 7.55503259e-01, 6.88897122e-01, 4.43082984e-01, 2.81833164e-01, 7.50000000e-01, 3.63521119e-01, 6.64534287e-01, 7.50000000e-01, 2.50000000e-01, 7.50000000e-01, 3.76634549e-01],
    [0.00000000e+00, 7.56803943e-01, 9.44103648e-01, 3.65781531e-01, 8.97081129e-01, 1.90173784e+00, 3.33972402e-01, 5.38649627e-01, 1.16798104e+00, 3.82937802e-01, 1.55432308e+00, 4.77325586e-01, 8.64250293e-01, 1.00058442e+00, 6.41280589e-01, 6.24442175e+00, 1.40579606e+00, 9.65555228e-01, 7.91320741e-01, 4.66777931e-01, 5.09360272e-01, 7.50000000e-01, 6.11094097e-01, 3.58149606e+00, 7.50000000e-01, 2.50000000e-01, 7.50000000e-01, 4.38898727e-01],
    [0.00000000e+00, 6.12698600e-01, 7.02873767e-01, 3.08939296e-01, 5.73200024e-01, 9.60797602e-01, 3.80726330e-01, 4.49983999e-01, 9.17048021e-01, 3.54751311e-01, 2.07680867e+00, 4.73919278e-01, 6.22623369e-01, 8.58630478e-01, 4.81534905e-01, 1.40579606e+00, 6.66557707e+00, 7.67165633e-01, 6.77754679e-01, 4.20072316e-01, 3.95102106e-01, 7.50000000e-01, 5.55965425e-01, 1.13292384e+00, 7.50000000e-01, 2.50000000e-01, 7.50000000e-01, 4.25403989e-01],
    [0.00000000e+00, 1.47210399e+00, 1.05798620e+00, 7.38415701e-01, 9.13504624e-01, 9.50357185e-01, 4.39973597e-01, 9.03596525e-01, 7.36731740e-01, 4.43163582e-01, 9.31919141e-01, 4.28893743e-01, 5.98558924e-01, 1.23152924e+00, 7.55503259e-01, 9.65555228e-01, 7.67165633e-01, 3.84284741e+00, 1.61392097e+00, 5.65223766e-01, 3.85303035e-01, 7.50000000e-01, 5.57520051e-01, 9.56235816e-01, 7.50000000e-01, 2.50000000e-01, 7.50000000e-01, 4.34703235e-01],
    [0.00000000e+00, 9.84401956e-01, 8.26250098e-01, 7.40551692e-01, 6.94789868e-01, 7.41425610e-01, 4.81693683e-01, 5.79271582e-01, 5.57503254e-01, 7.79816110e-01, 7.92905803e-01, 6.60328975e-01, 7.93801616e-01, 9.84152635e-01, 6.88897122e-01, 7.91320741e-01, 6.77754679e-01, 1.61392097e+00, 4.83210516e+00, 9.80943005e-01, 4.30934144e-01, 7.50000000e-01, 5.73156574e-01, 7.60725140e-01, 7.50000000e-01, 2.50000000e-01, 7.50000000e-01, 7.08974203e-01],
    [0.00000000e+00, 9.36458396e-01, 3.51280513e-01, 7.55844055e-01, 3.36500142e-01, 4.28943130e-01, 7.45089738e-01, 3.36954912e-01, 3.39447442e-01, 2.41751209e+00, 4.56542720e-01, 1.31423573e+00, 1.26893679e+00, 3.69033853e-01, 4.43082984e-01, 4.66777931e-01, 4.20072316e-01, 5.65223766e-01, 9.80943005e-01, 3.69215640e+00, 3.74456332e-01, 7.50000000e-01, 6.58038693e-01, 4.43577702e-01, 7.50000000e-01, 2.50000000e-01, 7.50000000e-01, 1.76339815e+00],
    [0.00000000e+00, 4.16548781e-01, 2.52855433e-01, 4.49983903e-01, 2.32102315e-01, 3.74300212e-01, 1.37437942e+00, 4.21690355e-01, 4.44088955e-01, 4.08874390e-01, 3.58930071e-01, 5.68037074e-01, 6.10296214e-01, 2.77782896e-01, 2.81833164e-01, 5.09360272e-01, 3.95102106e-01, 3.85303035e-01, 4.30934144e-01, 3.74456332e-01, 3.81077833e+01, 7.50000000e-01, 2.10980812e+00, 4.26541694e-01, 7.50000000e-01, 2.50000000e-01, 7.50000000e-01, 5.03239261e-01],
    [0.00000000e+00, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 2.50000000e-01, 7.50000000e-01, 7.50000000e-01],
    [0.00000000e+00, 5.42611869e-01, 4.09444638e-01, 4.34203398e-01, 3.45683565e-01, 4.96467354e-01, 2.76938063e+00, 3.48714366e-01, 1.79790413e+00, 6.30388931e-01, 5.32179333e-01, 6.92059423e-01, 7.08364628e-01, 4.86030806e-01, 3.63521119e-01, 6.11094097e-01, 5.55965425e-01, 5.57520051e-01, 5.73156574e-01, 6.58038693e-01, 2.10980812e+00, 7.50000000e-01, 9.83220341e+00, 5.40805192e-01, 7.50000000e-01, 2.50000000e-01, 7.50000000e-01, 6.66952325e-01],
    [0.00000000e+00, 7.47274948e-01, 1.18382127e+00, 3.16819526e-01, 1.38195506e+00, 4.08949895e+00, 3.31992746e-01, 5.03463109e-01, 1.04047242e+00, 3.50796872e-01, 1.40344922e+00, 4.13275887e-01, 6.41102583e-01, 9.45834265e-01, 6.64534287e-01, 3.58149606e+00, 1.13292384e+00, 9.56235816e-01, 7.60725140e-01, 4.43577702e-01, 4.26541694e-01, 7.50000000e-01, 5.40805192e-01, 3.89300249e+00, 7.50000000e-01, 2.50000000e-01, 7.50000000e-01, 3.87839626e-01],
    [0.00000000e+00, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 2.50000000e-01, 7.50000000e-01, 7.50000000e-01],
    [0.00000000e+00, 2.50000000e-01, 2.50000000e-01, 2.50000000e-01, 2.50000000e-01, 2.50000000e-01, 2.50000000e-01, 2.50000000e-01, 2.50000000e-01, 2.50000000e-01, 2.50000000e-01, 2.50000000e-01, 2.50000000e-01, 2.50000000e-01, 2.50000000e-01, 2.50000000e-01, 2.50000000e-01, 2.50000000e-01, 2.50000000e-01, 2.50000000e-01, 2.50000000e-01, 2.50000000e-01, 2.50000000e-01, 2.50000000e-01, 2.50000000e-01, 1.33300000e+00, 2.50000000e-01, 2.50000000e-01],
    [0.00000000e+00, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 7.50000000e-01, 2.50000000e-01, 7.50000000e-01, 7.50000000e-01],
    [0.00000000e+00, 6.14377313e-01, 3.12208474e-01, 6.46828489e-01, 3.07946931e-01, 3.55631838e-01, 1.06958025e+00, 2.80638726e-01, 3.58533474e-01, 2.63222650e+00, 4.15284382e-01, 2.94078574e+00, 1.78399892e+00, 3.17327197e-01, 3.76634549e-01, 4.38898727e-01, 4.25403989e-01, 4.34703235e-01, 7.08974203e-01, 1.76339815e+00, 5.03239261e-01, 7.50000000e-01, 6.66952325e-01, 3.87839626e-01, 7.50000000e-01, 2.50000000e-01, 7.50000000e-01, 2.81516607e+00],
];

/// A residue composition over the NCBIstdaa alphabet (zero outside the true amino acids).
pub type Composition = [f64; 28];

/// NCBI's rounding to the nearest integer (halves away from zero).
fn nint(x: f64) -> i32 {
    (x + if x >= 0.0 { 0.5 } else { -0.5 }) as i32
}

fn gcd(mut a: i32, mut b: i32) -> i32 {
    b = b.abs();
    if b > a {
        std::mem::swap(&mut a, &mut b);
    }
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// λ of score probabilities `probs[s - low]` for scores `low..=high` (`Blast_KarlinLambdaNR`:
/// the root of Σ p(s)·e^(λs) = 1 by Newton steps on x = e^(−λ), bisection when they
/// fail, to 1e-5); `None` when the expected score is not negative.
fn lambda(probs: &[f64], low: i32, high: i32, lambda0: f64) -> Option<f64> {
    let avg: f64 = probs.iter().enumerate().map(|(i, p)| (low + i as i32) as f64 * p).sum();
    if avg >= 0.0 || low >= 0 || high <= 0 {
        return None;
    }
    let p = |s: i32| probs[(s - low) as usize];
    let mut d = -low;
    let mut i = 1;
    while i <= high - low && d > 1 {
        if p(i + low) != 0.0 {
            d = gcd(d, i);
        }
        i += 1;
    }
    let (tolx, itmax, max_newton) = (1e-5, 20, 37);
    let x0 = (-lambda0).exp();
    let mut x = if 0.0 < x0 && x0 < 1.0 { x0 } else { 0.5 };
    let (mut a, mut b) = (0.0f64, 1.0f64);
    let mut f = 4.0f64;
    let mut is_newton = false;
    for k in 0..itmax {
        let fold = f;
        let was_newton = is_newton;
        is_newton = false;
        // Horner's rule for the polynomial and its derivative.
        let mut g = 0.0;
        f = p(low);
        let mut s = low + d;
        while s < 0 {
            g = x * g + f;
            f = f * x + p(s);
            s += d;
        }
        g = x * g + f;
        f = f * x + p(0) - 1.0;
        s = d;
        while s <= high {
            g = x * g + f;
            f = f * x + p(s);
            s += d;
        }
        if f > 0.0 {
            a = x;
        } else if f < 0.0 {
            b = x;
        } else {
            break;
        }
        if b - a < 2.0 * a * (1.0 - b) * tolx {
            x = (a + b) / 2.0;
            break;
        }
        if k >= max_newton || (was_newton && f.abs() > 0.9 * fold.abs()) || g >= 0.0 {
            x = (a + b) / 2.0;
        } else {
            let step = -f / g;
            let y = x + step;
            if y <= a || y >= b {
                x = (a + b) / 2.0;
            } else {
                is_newton = true;
                x = y;
                if step.abs() < tolx * x * (1.0 - x) {
                    break;
                }
            }
        }
    }
    Some(-x.ln() / d as f64)
}

/// What every pair shares: BLOSUM62's frequency ratios, λ_u and the scaled start matrix.
#[derive(Clone, Debug)]
pub struct Compo {
    /// λ_u / 32: the scale of [`Compo::start`].
    ungapped_lambda: f64,
    /// round(ln(ratio) / (λ_u / 32)), NCBIstdaa.
    start: [[i32; 28]; 28],
    /// Each of the matrix's letter codes as an NCBIstdaa index.
    to_ncbi: Vec<usize>,
}

impl Compo {
    /// The shared part for `matrix`, which must be BLOSUM62 (the frequency ratios are
    /// BLOSUM62's); its letters are mapped to NCBIstdaa by name.
    ///
    /// # Errors
    /// A letter NCBIstdaa lacks.
    pub fn new(matrix: &Matrix) -> Result<Compo, String> {
        let to_ncbi = matrix
            .letters
            .iter()
            .map(|&l| {
                NCBI.iter().position(|&n| n == l.to_ascii_uppercase()).ok_or_else(|| {
                    format!("composition-based statistics: the matrix letter `{}` is no NCBIstdaa letter", l as char)
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let ideal = ideal_lambda();
        let ungapped_lambda = ideal / SCALE as f64;
        let mut start = [[0i32; 28]; 28];
        for (i, row) in start.iter_mut().enumerate() {
            for (j, s) in row.iter_mut().enumerate() {
                *s = nint(freq_score(FREQ_RATIOS[i][j], ungapped_lambda));
            }
        }
        Ok(Compo { ungapped_lambda, start, to_ncbi })
    }

    /// The composition of a sequence of the matrix's codes: the frequency of each true
    /// amino acid among the sequence's true amino acids.
    pub fn composition(&self, codes: &[u8]) -> Composition {
        let mut c = [0.0; 28];
        let mut n = 0usize;
        for &code in codes {
            let k = self.to_ncbi.get(code as usize).copied().unwrap_or(X);
            if TRUE_AA.contains(&k) {
                c[k] += 1.0;
                n += 1;
            }
        }
        if n > 0 {
            for v in &mut c {
                *v /= n as f64;
            }
        }
        c
    }

    /// The λ ratio r of a query composition `q` and a subject composition `s`
    /// (`Blast_CompositionBasedStats`: clamped to [½, 1]).
    pub fn lambda_ratio(&self, q: &Composition, s: &Composition) -> f64 {
        let (lo, hi, probs) = self.score_probs(q, s);
        let corrected = lambda(&probs, lo, hi, self.ungapped_lambda).unwrap_or(-1.0);
        (corrected / self.ungapped_lambda).clamp(RATIO_MIN, 1.0)
    }

    /// The scores' range and probabilities of the start matrix for compositions `q`
    /// and `s` (`s_GetMatrixScoreProbs`).
    fn score_probs(&self, q: &Composition, s: &Composition) -> (i32, i32, Vec<f64>) {
        // The range: true-amino-acid columns of every row. Every score counts (blastp
        // 2.12 agrees with this; leaving out those at or below −128, as the 2012
        // source's `s_GetScoreRange` reads, drops real pairs such as D–W and gives λ
        // ratios 0.5% higher than blastp's).
        let (mut lo, mut hi) = (0, 0);
        for row in &self.start {
            for &j in &TRUE_AA {
                lo = lo.min(row[j]);
                hi = hi.max(row[j]);
            }
        }
        let mut probs = vec![0.0; (hi - lo + 1) as usize];
        for (i, row) in self.start.iter().enumerate() {
            for &j in &TRUE_AA {
                let v = row[j];
                if v >= lo {
                    probs[(v - lo) as usize] += q[i] * s[j];
                }
            }
        }
        (lo, hi, probs)
    }

    /// The rescaled matrix of a pair, in the matrix's codes (query codes index rows),
    /// at 32 times BLOSUM62's precision, and the λ ratio it was made with.
    pub fn matrix(&self, q: &Composition, s: &Composition) -> (Box<[[i32; MAX_LETTERS]; MAX_LETTERS]>, f64) {
        let r = self.lambda_ratio(q, s);
        let scaled = self.ungapped_lambda / r;
        let mut m = [[0.0f64; 28]; 28];
        for (i, row) in m.iter_mut().enumerate() {
            for (j, v) in row.iter_mut().enumerate() {
                *v = freq_score(FREQ_RATIOS[i][j], scaled);
            }
        }
        set_xuo_scores(&mut m, q, s);
        let mut out = Box::new([[0i32; MAX_LETTERS]; MAX_LETTERS]);
        for (a, &i) in self.to_ncbi.iter().enumerate() {
            for (b, &j) in self.to_ncbi.iter().enumerate() {
                out[a][b] = if i == STOP || j == STOP { self.start[i][j] } else { nint(m[i][j]) };
            }
        }
        (out, r)
    }
}

/// A frequency ratio as a score at scale `lambda` (`Blast_FreqRatioToScore`).
fn freq_score(ratio: f64, lambda: f64) -> f64 {
    if ratio == 0.0 {
        SCORE_MIN
    } else {
        ratio.ln() / lambda
    }
}

/// X's scores (and so U's and O's) from the compositions (`s_SetXUOScores`): the mean
/// score of the row (column) weighted by the other sequence's composition, at most −1.
fn set_xuo_scores(m: &mut [[f64; 28]; 28], row_probs: &Composition, col_probs: &Composition) {
    let row_avg = |m: &[[f64; 28]; 28], i: usize| TRUE_AA.iter().map(|&j| m[i][j] * col_probs[j]).sum::<f64>();
    let col_avg = |m: &[[f64; 28]; 28], j: usize| TRUE_AA.iter().map(|&i| m[i][j] * row_probs[i]).sum::<f64>();
    let mut xx = 0.0;
    for &i in &TRUE_AA {
        let avg = row_avg(m, i);
        m[i][X] = avg.min(MAX_X_SCORE);
        xx += avg * row_probs[i];
        m[X][i] = col_avg(m, i).min(MAX_X_SCORE);
    }
    m[X][X] = xx.min(MAX_X_SCORE);
    for k in [B, Z, J] {
        m[k][X] = row_avg(m, k).min(MAX_X_SCORE);
        m[X][k] = col_avg(m, k).min(MAX_X_SCORE);
    }
    for k in [U, O] {
        m[k] = m[X];
        for row in m.iter_mut() {
            row[k] = row[X];
        }
    }
}

/// BLAST's `kbp_ideal` λ: the ungapped λ of the integer BLOSUM62 for Robinson &
/// Robinson's frequencies.
fn ideal_lambda() -> f64 {
    let b = Matrix::blosum62();
    let total: f64 = ROBINSON.iter().map(|r| r.1).sum();
    let code = |l: u8| b.letters.iter().position(|&x| x == l).expect("BLOSUM62 has the 20 amino acids");
    let (lo, hi) = (-4i32, 11i32);
    let mut probs = vec![0.0; (hi - lo + 1) as usize];
    for &(la, pa) in &ROBINSON {
        for &(lb, pb) in &ROBINSON {
            probs[(b.score(code(la) as u8, code(lb) as u8) - lo) as usize] += pa / total * pb / total;
        }
    }
    let sum: f64 = probs.iter().sum();
    for p in &mut probs {
        *p /= sum;
    }
    lambda(&probs, lo, hi, 0.5).expect("BLOSUM62's expected score is negative")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ideal_lambda_is_blasts() {
        // blast_stat.c's table lists BLOSUM62's ungapped λ as 0.3176.
        assert!((ideal_lambda() - 0.3176).abs() < 5e-5, "{}", ideal_lambda());
    }

    /// At the standard composition the λ ratio is about 0.98 (the frequency ratios at
    /// λ_u are slightly coarser than the rounded matrix), and the rescaled matrix is
    /// BLOSUM62 at 32 times its scale within the integer matrix's rounding.
    #[test]
    fn standard_composition_leaves_blosum62() {
        let m = Matrix::blosum62();
        let c = Compo::new(&m).unwrap();
        let mut q = [0.0; 28];
        let total: f64 = ROBINSON.iter().map(|r| r.1).sum();
        for &(l, p) in &ROBINSON {
            q[NCBI.iter().position(|&n| n == l).unwrap()] = p / total;
        }
        let r = c.lambda_ratio(&q, &q);
        assert!((0.975..=0.99).contains(&r), "{r}");
        let (adj, _) = c.matrix(&q, &q);
        for a in 0..20 {
            for b in 0..20 {
                let want = m.score(a as u8, b as u8) as f64 * SCALE as f64;
                // Within the integer matrix's rounding (half a unit, here at a scale
                // 7% finer: ln(ratio)/λ_u against BLOSUM62's half bits).
                let tol = SCALE as f64 * (0.6 + 0.1 * want.abs() / SCALE as f64);
                assert!((adj[a][b] as f64 - want).abs() <= tol, "{a} {b}: {} vs {want}", adj[a][b]);
            }
        }
    }

    /// A biased pair (both rich in one residue) gets a λ ratio below 1, and scores shrink.
    #[test]
    fn biased_composition_lowers_lambda() {
        let m = Matrix::blosum62();
        let c = Compo::new(&m).unwrap();
        let q = m.encode(b"WWWWWWWWWWCCCCCCCCCCAKLMNPQRSTVY").unwrap();
        let cq = c.composition(&q);
        let r = c.lambda_ratio(&cq, &cq);
        assert!((0.5..0.9).contains(&r), "{r}");
        let (adj, r2) = c.matrix(&cq, &cq);
        assert_eq!(r, r2);
        let w = m.code[b'W' as usize] as usize;
        assert!(adj[w][w] < 11 * SCALE, "{}", adj[w][w]);
        let x = m.code[b'X' as usize] as usize;
        assert!(adj[x][x] <= -1 && adj[w][x] <= -1);
    }
}

#[cfg(test)]
mod lambda_tests {
    use super::*;

    /// λ by plain bisection on Σ p(s)·e^(λs) − 1, the reference for [`lambda`].
    fn bisect(probs: &[f64], low: i32) -> f64 {
        let f =
            |l: f64| probs.iter().enumerate().map(|(i, p)| p * (l * (low + i as i32) as f64).exp()).sum::<f64>() - 1.0;
        let (mut lo, mut hi) = (1e-9, 1.0);
        while f(hi) < 0.0 {
            hi *= 2.0;
        }
        for _ in 0..200 {
            let mid = (lo + hi) / 2.0;
            if f(mid) < 0.0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    #[test]
    fn newton_lambda_equals_bisection() {
        let m = Matrix::blosum62();
        let c = Compo::new(&m).unwrap();
        let q = c.composition(
            &m.encode(b"SVAAVGIAYIFPVGAMVFSFFAMMPPNLLALHTHMGKLSSEVRLRPIEGRYEWGLVHPDACDENKQNLENSSHDIIGLRCGESGR")
                .unwrap(),
        );
        let (lo, hi, probs) = c.score_probs(&q, &q);
        let want = bisect(&probs, lo);
        let got = lambda(&probs, lo, hi, c.ungapped_lambda).unwrap();
        assert!((got - want).abs() <= 1e-4 * want, "{got} vs {want}");
    }
}
