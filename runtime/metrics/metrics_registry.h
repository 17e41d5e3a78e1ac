#ifndef DISTRT_RUNTIME_METRICS_METRICS_REGISTRY_H_
#define DISTRT_RUNTIME_METRICS_METRICS_REGISTRY_H_

// MetricsRegistry: a process's metrics, rendered in the Prometheus text
// exposition format 0.0.4 for a scraper (see metrics_http_server.h).
//
// A registry holds families. A family has a name, help text, a type (counter,
// gauge or histogram) and a fixed list of label names given when it is
// registered; each distinct list of label values is a cell, made on first use:
//
//   MetricsRegistry registry;
//   Counter* requests =
//       registry.AddCounter("distrt_rpc_requests_total",
//                           "RPCs handled, by method and status code.",
//                           {"method", "code"}).value();
//   ...
//   requests->WithLabels({"PushDense", "OK"})->Increment();
//
// Ownership and lifetime: the registry owns its families and their cells and
// never removes any, so every Counter*, Gauge*, Histogram* and cell pointer it
// hands out stays valid until the registry is destroyed. There is no global
// registry: main() makes one and passes it down by pointer.
//
// Threads: every method of every class here may be called from any thread.
// Updating a cell (Increment, Set, Add, Observe) is lock-free: a few relaxed
// atomic operations, so it is cheap enough for a hot RPC path. WithLabels
// takes the family's lock (a reader lock once the cell exists), so a hot path
// that always uses the same label values should keep the cell pointer.
//
// Errors: registration (Add*) checks its arguments and returns
// InvalidArgument for a bad name, help text, label list or bucket list and
// AlreadyExists for a name already taken. WithLabels with the wrong number of
// values is a bug in the calling code, not something the environment causes;
// rather than crash the process over a metric, or make every hot path unwrap
// a StatusOr, it returns a cell that is never exported and counts the call in
// the registry's own counter distrt_metrics_label_arity_errors_total, which
// every exposition carries, so the bug shows up on a dashboard.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"

namespace distrt {

// One counter's value: it only goes up (until the process restarts, which
// Prometheus' rate() detects).
class CounterCell {
 public:
  CounterCell() = default;
  CounterCell(const CounterCell&) = delete;
  CounterCell& operator=(const CounterCell&) = delete;

  // Adds `delta`. A negative or NaN delta is ignored: a counter that went
  // down would read as a restart.
  void Increment(double delta = 1);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// One gauge's value: goes up and down.
class GaugeCell {
 public:
  GaugeCell() = default;
  GaugeCell(const GaugeCell&) = delete;
  GaugeCell& operator=(const GaugeCell&) = delete;

  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  // Adds `delta` (negative to subtract).
  void Add(double delta);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// One histogram's observations, counted in buckets with fixed upper bounds.
class HistogramCell {
 public:
  // `bounds`: the buckets' upper bounds, strictly increasing and finite (the
  // +Inf bucket is implicit); AddHistogram has checked them.
  explicit HistogramCell(std::vector<double> bounds);
  HistogramCell(const HistogramCell&) = delete;
  HistogramCell& operator=(const HistogramCell&) = delete;

  // Counts `value` in the first bucket whose bound is >= value (Prometheus'
  // "le"); NaN goes to the +Inf bucket only and makes the sum NaN.
  void Observe(double value);

  // What a scrape reads. The bucket counts are read one at a time, so an
  // Observe racing with the read may be in the count and not yet in the sum
  // or the other way round; the count is the buckets' total, so the +Inf
  // bucket and _count always agree.
  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative_counts;  // bounds.size() + 1 (+Inf)
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot Read() const;

 private:
  const std::vector<double> bounds_;
  // bounds_.size() + 1 counts, not cumulative; the last is the +Inf bucket.
  const std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  std::atomic<double> sum_{0};
};

namespace metrics_internal {

// What the registry knows of every family, whatever its type.
class Family {
 public:
  Family(std::string name, std::string help,
         std::vector<std::string> label_names);
  virtual ~Family() = default;
  Family(const Family&) = delete;
  Family& operator=(const Family&) = delete;

  const std::string& name() const { return name_; }
  const std::vector<std::string>& label_names() const { return label_names_; }

  // Appends the family's "# HELP" and "# TYPE" lines and its samples.
  void AppendExposition(std::string* out) const;

 protected:
  virtual absl::string_view type() const = 0;
  virtual void AppendSamples(std::string* out) const = 0;

 private:
  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
};

// Orders lists of label values; transparent, so that a lookup by
// Span<const string_view> needs no copy.
struct LabelValuesLess {
  using is_transparent = void;
  bool operator()(absl::Span<const std::string> a,
                  absl::Span<const std::string> b) const;
  bool operator()(absl::Span<const std::string> a,
                  absl::Span<const absl::string_view> b) const;
  bool operator()(absl::Span<const absl::string_view> a,
                  absl::Span<const std::string> b) const;
};

// The cells of one family, by label values. Instantiated (in the .cc) for
// CounterCell, GaugeCell and HistogramCell.
template <typename Cell>
class LabeledFamily : public Family {
 public:
  // The cell for `label_values`, one per label name in registration order;
  // made on first use. Never null: see the top of this file for what a wrong
  // number of values does.
  Cell* WithLabels(absl::Span<const absl::string_view> label_values);

 protected:
  // `new_cell` makes a cell (a histogram's carries its bounds);
  // `arity_errors` is the registry's and outlives this family, or null for
  // that counter's own family.
  LabeledFamily(std::string name, std::string help,
                std::vector<std::string> label_names,
                std::function<std::unique_ptr<Cell>()> new_cell,
                CounterCell* arity_errors);

  // Every cell with its label values, sorted by them. Copied under the lock
  // so that the caller reads the cells without it.
  std::vector<std::pair<const std::vector<std::string>*, const Cell*>>
  SortedCells() const;

 private:
  const std::function<std::unique_ptr<Cell>()> new_cell_;
  CounterCell* const arity_errors_;
  // Takes the updates of WithLabels calls with the wrong number of values.
  const std::unique_ptr<Cell> discarded_;

  mutable absl::Mutex mu_;
  // Cells are never removed: the pointers handed out stay valid.
  std::map<std::vector<std::string>, std::unique_ptr<Cell>, LabelValuesLess>
      cells_ ABSL_GUARDED_BY(mu_);
};

}  // namespace metrics_internal

// A counter family. Its name must end in "_total" (Prometheus' convention,
// which promtool checks).
class Counter final : public metrics_internal::LabeledFamily<CounterCell> {
 private:
  friend class MetricsRegistry;
  Counter(std::string name, std::string help,
          std::vector<std::string> label_names, CounterCell* arity_errors);

  absl::string_view type() const override { return "counter"; }
  void AppendSamples(std::string* out) const override;
};

class Gauge final : public metrics_internal::LabeledFamily<GaugeCell> {
 private:
  friend class MetricsRegistry;
  Gauge(std::string name, std::string help,
        std::vector<std::string> label_names, CounterCell* arity_errors);

  absl::string_view type() const override { return "gauge"; }
  void AppendSamples(std::string* out) const override;
};

// A histogram family; exported as <name>_bucket{le="..."} (cumulative, with
// le="+Inf"), <name>_sum and <name>_count.
class Histogram final : public metrics_internal::LabeledFamily<HistogramCell> {
 private:
  friend class MetricsRegistry;
  Histogram(std::string name, std::string help,
            std::vector<std::string> label_names, std::vector<double> bounds,
            CounterCell* arity_errors);

  absl::string_view type() const override { return "histogram"; }
  void AppendSamples(std::string* out) const override;
};

// Bucket bounds start, start*factor, ..., count of them: e.g.
// ExponentialBuckets(0.0001, 2, 18) spans 100us to about 13s of latency.
// Needs start > 0, factor > 1 and count >= 1; other arguments give a list
// that AddHistogram rejects (or, for count <= 0, an empty list: only +Inf).
std::vector<double> ExponentialBuckets(double start, double factor, int count);

class MetricsRegistry {
 public:
  // Registers distrt_metrics_label_arity_errors_total (see the top).
  MetricsRegistry();
  ~MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // Registers a family. `name` must match [a-zA-Z_:][a-zA-Z0-9_:]* and must
  // not clash with a name already registered, including the _bucket, _sum
  // and _count series of a histogram; `help` must not be empty; each label
  // name must match [a-zA-Z_][a-zA-Z0-9_]*, not start with "__" and appear
  // once. A family with no labels has its one cell from the start (exported
  // as 0); a labeled one exports only the cells used so far. The returned
  // pointer is owned by the registry.
  absl::StatusOr<Counter*> AddCounter(
      absl::string_view name, absl::string_view help,
      std::vector<std::string> label_names = {});
  absl::StatusOr<Gauge*> AddGauge(absl::string_view name,
                                  absl::string_view help,
                                  std::vector<std::string> label_names = {});
  // `bounds`: the buckets' upper bounds, strictly increasing, not NaN; a
  // trailing +Inf is dropped (that bucket is always there). The label name
  // "le" is reserved.
  absl::StatusOr<Histogram*> AddHistogram(absl::string_view name,
                                          absl::string_view help,
                                          std::vector<std::string> label_names,
                                          std::vector<double> bounds);

  // An unlabeled gauge whose value is `callback()` at each scrape, for values
  // that something else already keeps (variables held, bytes cached).
  // `callback` runs on the scraping thread with no registry lock held, so it
  // may take its own locks (and even use this registry, except Exposition);
  // it must be thread-safe and whatever it uses must outlive the registry.
  absl::Status AddCallbackGauge(absl::string_view name, absl::string_view help,
                                std::function<double()> callback);

  // `hook` runs at the start of every Exposition, before any family is
  // rendered, for labeled families whose cells copy values something else
  // keeps (per-table counters). The same rules as a callback gauge's.
  void AddScrapeHook(std::function<void()> hook);

  // Every family, sorted by name, in the text exposition format 0.0.4.
  std::string Exposition() const;

 private:
  // Checks the name, help and labels and reserves the series names.
  absl::Status Reserve(absl::string_view name, absl::string_view help,
                       const std::vector<std::string>& label_names,
                       bool is_histogram) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  CounterCell* arity_errors_ = nullptr;  // owned by its family in families_

  mutable absl::Mutex mu_;
  // Families are never removed, so pointers to them stay valid.
  std::map<std::string, std::unique_ptr<metrics_internal::Family>> families_
      ABSL_GUARDED_BY(mu_);
  // Every series name a family exports (a histogram's three too).
  std::set<std::string, std::less<>> series_names_ ABSL_GUARDED_BY(mu_);
  // Shared, so that Exposition runs them with no lock held.
  std::vector<std::shared_ptr<const std::function<void()>>> scrape_hooks_
      ABSL_GUARDED_BY(mu_);
};

// The text format's spelling of a sample value: integers without an exponent
// ("3", "1000000"), other finite values in the fewest digits that read back
// exactly ("0.1", "2.5e-07"), and "+Inf", "-Inf", "NaN". Exposed for tests
// and for the "le" label.
std::string FormatMetricValue(double value);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_METRICS_METRICS_REGISTRY_H_
