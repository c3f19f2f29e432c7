"""Oscillation analysis: does utilization swing between two levels, with what period, duty cycle and synchrony?

Pure functions on the tidy telemetry table (schema.TELEMETRY_COLUMNS); no thresholds tuned to fixtures. Method:

1. Levels. Per GPU, the optimal two-cluster split of its utilization values (Otsu = exact 1-D 2-means on a
   histogram). The split is "bimodal" when the clusters are separated by at least SEPARATION_MIN pooled robust
   standard deviations (IQR/1.349, floored at the counter's resolution) — a unimodal distribution's 2-means split
   never reaches that (Gaussian 2.65, uniform 3.46) — and by at least MIN_AMPLITUDE_PCT points (smaller swings
   are not worth diagnosing). A cluster piled at the counter's bound (100% busy) is censored there: it takes the
   other cluster's spread, so a noisy level pinned at 100% is not mistaken for two.
   When the raw samples are too noisy to split, the same test runs on a moving median of 3, 5, then 9 samples
   (a median filter cannot turn a unimodal distribution bimodal; it only removes noise shorter than its window).
2. States and episodes. Samples are labelled high/low with hysteresis (the middle third between the levels keeps
   the previous state, so noise does not fake transitions). Sampling gaps longer than GAP_FACTOR intervals split
   the series into segments; an episode touching a segment edge is incomplete.
3. Swings. A GPU swings when it is bimodal, drops at least twice between busy stretches (the swing recurs; idle
   time before the first and after the last busy stretch — start-up, teardown — does not count) and its minority
   state holds ≥ 1% of the busy span. A series too short for that (< MIN_SAMPLES_PERIOD samples) swings with
   two transitions.
4. Period. Two tests at ALPHA, either suffices:
   a. spectrum: a Lomb-Scargle periodogram (computed with FFTs, so gaps, jitter and uneven sampling are handled)
      against its local noise background: the median of the surrounding ordinates (±max(4.5/span, 20% of f)),
      which follows any smooth noise spectrum — white, red, the Lorentzian of a random telegraph signal (i.e.
      irregular swings) — while a narrow line stands out. The p-value accounts exactly for the noise in that
      median (order statistics of exponential ordinates) and is Šidák-corrected over the independent frequencies
      searched. The search covers periods from two sampling intervals (the aliasing guard: nothing shorter is
      ever reported) to a third of the span (three cycles at least). The fundamental is the lowest significant
      subharmonic of the strongest peak.
   b. regularity: the coefficient of variation of the intervals between successive drops, against its
      distribution when high and low dwell times are exponential with the observed means (memoryless swings).
   The reported period is the mean interval between drops (within ±25% of their median) when the drops are
   regular, else the spectral fundamental (refined by parabolic interpolation).
5. Duty cycle: the share of complete cycles spent high (episodes weighted by their duration).
6. Synchrony. Swinging GPUs' states on a common grid; two GPUs "go low together" when most of their low time
   coincides (overlap coefficient ≥ 0.5) and the association is significant (phi coefficient; its n deflated by
   the telegraph autocorrelation of both series, Bartlett; Bonferroni over pairs). Average-linkage clustering on that overlap gives the groups;
   a pair of groups whose lows avoid each other significantly (phi < 0) is anti-phase (producer/consumer).

Scales to millions of rows: one vectorised pass per GPU; synchrony compares all pairs up to 512 swinging GPUs
and a sample of 512 with the rest joining its groups above (linear in GPUs).

Modules, in the order of the method: levels (1-2), spectrum (4a), swing (one series: 3-5), synchrony (6), fleet
(the verdict for a set of GPUs, and the frames for plots). The per-GPU series come from playbook.analysis.series.
"""

ALPHA = 0.01  # the significance level of every test here (the period's two, synchrony's pairs)
MIN_SAMPLES_PERIOD = 12  # three cycles of four samples: fewer cannot support a period estimate
