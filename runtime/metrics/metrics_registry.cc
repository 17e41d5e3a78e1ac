#include "runtime/metrics/metrics_registry.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// std::atomic<double>::fetch_add is C++20; this is what it does.
void AtomicAdd(std::atomic<double>* target, double delta) {
  double old = target->load(std::memory_order_relaxed);
  while (!target->compare_exchange_weak(old, old + delta,
                                        std::memory_order_relaxed)) {
  }
}

// `# HELP` text escapes backslash and newline; label values also escape the
// double quote that would end them.
void AppendEscaped(absl::string_view text, bool quote, std::string* out) {
  for (char c : text) {
    switch (c) {
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '"':
        out->append(quote ? "\\\"" : "\"");
        break;
      default:
        out->push_back(c);
    }
  }
}

// One sample line: name{label="value",...} value. `le`, when not empty, is a
// histogram bucket's extra label.
void AppendSample(absl::string_view name,
                  const std::vector<std::string>& label_names,
                  const std::vector<std::string>& label_values,
                  absl::string_view le, absl::string_view value,
                  std::string* out) {
  out->append(name.data(), name.size());
  if (!label_names.empty() || !le.empty()) {
    out->push_back('{');
    for (size_t i = 0; i < label_names.size(); ++i) {
      if (i > 0) out->push_back(',');
      absl::StrAppend(out, label_names[i], "=\"");
      AppendEscaped(label_values[i], /*quote=*/true, out);
      out->push_back('"');
    }
    if (!le.empty()) {
      absl::StrAppend(out, label_names.empty() ? "" : ",", "le=\"", le, "\"");
    }
    out->push_back('}');
  }
  absl::StrAppend(out, " ", value, "\n");
}

bool IsValidMetricName(absl::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = absl::ascii_isalpha(c) || c == '_' || c == ':' ||
                    (i > 0 && absl::ascii_isdigit(c));
    if (!ok) return false;
  }
  return true;
}

bool IsValidLabelName(absl::string_view name) {
  if (name.empty() || absl::StartsWith(name, "__")) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok =
        absl::ascii_isalpha(c) || c == '_' || (i > 0 && absl::ascii_isdigit(c));
    if (!ok) return false;
  }
  return true;
}

// A gauge read at scrape time; not a LabeledFamily, since it has no cells.
class CallbackGauge final : public metrics_internal::Family {
 public:
  CallbackGauge(std::string name, std::string help,
                std::function<double()> callback)
      : Family(std::move(name), std::move(help), {}),
        callback_(std::move(callback)) {}

 private:
  absl::string_view type() const override { return "gauge"; }
  void AppendSamples(std::string* out) const override {
    AppendSample(name(), {}, {}, "", FormatMetricValue(callback_()), out);
  }

  const std::function<double()> callback_;
};

constexpr char kArityErrorsName[] = "distrt_metrics_label_arity_errors_total";
constexpr char kArityErrorsHelp[] =
    "WithLabels calls with the wrong number of label values (a bug in the "
    "caller); their updates were dropped.";

}  // namespace

std::string FormatMetricValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // Below 2^53 every integer is exact; print it as one (no "1e+06").
  if (std::trunc(value) == value && std::fabs(value) < 9007199254740992.0) {
    return absl::StrCat(static_cast<int64_t>(value));
  }
  // The shortest of %.15g..%.17g that reads back as the same double: "0.1"
  // rather than "0.10000000000000001".
  for (int precision = 15; precision < 17; ++precision) {
    std::string text = absl::StrFormat("%.*g", precision, value);
    if (std::strtod(text.c_str(), nullptr) == value) return text;
  }
  return absl::StrFormat("%.17g", value);
}

void CounterCell::Increment(double delta) {
  if (!(delta >= 0)) return;  // negative or NaN
  AtomicAdd(&value_, delta);
}

void GaugeCell::Add(double delta) { AtomicAdd(&value_, delta); }

HistogramCell::HistogramCell(std::vector<double> bounds)
    : bounds_(std::move(bounds)),
      counts_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0);
}

void HistogramCell::Observe(double value) {
  const size_t bucket =
      std::isnan(value)
          ? bounds_.size()
          : std::lower_bound(bounds_.begin(), bounds_.end(), value) -
                bounds_.begin();
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  AtomicAdd(&sum_, value);
}

HistogramCell::Snapshot HistogramCell::Read() const {
  Snapshot snapshot;
  snapshot.bounds = bounds_;
  snapshot.cumulative_counts.reserve(bounds_.size() + 1);
  uint64_t total = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    total += counts_[i].load(std::memory_order_relaxed);
    snapshot.cumulative_counts.push_back(total);
  }
  snapshot.count = total;
  snapshot.sum = sum_.load(std::memory_order_relaxed);
  return snapshot;
}

namespace metrics_internal {

Family::Family(std::string name, std::string help,
               std::vector<std::string> label_names)
    : name_(std::move(name)),
      help_(std::move(help)),
      label_names_(std::move(label_names)) {}

void Family::AppendExposition(std::string* out) const {
  absl::StrAppend(out, "# HELP ", name_, " ");
  AppendEscaped(help_, /*quote=*/false, out);
  absl::StrAppend(out, "\n# TYPE ", name_, " ", type(), "\n");
  AppendSamples(out);
}

namespace {
template <typename A, typename B>
bool LexicographicallyLess(absl::Span<const A> a, absl::Span<const B> b) {
  return std::lexicographical_compare(
      a.begin(), a.end(), b.begin(), b.end(), [](const auto& x, const auto& y) {
        return absl::string_view(x) < absl::string_view(y);
      });
}
}  // namespace

bool LabelValuesLess::operator()(absl::Span<const std::string> a,
                                 absl::Span<const std::string> b) const {
  return LexicographicallyLess(a, b);
}
bool LabelValuesLess::operator()(absl::Span<const std::string> a,
                                 absl::Span<const absl::string_view> b) const {
  return LexicographicallyLess(a, b);
}
bool LabelValuesLess::operator()(absl::Span<const absl::string_view> a,
                                 absl::Span<const std::string> b) const {
  return LexicographicallyLess(a, b);
}

template <typename Cell>
LabeledFamily<Cell>::LabeledFamily(
    std::string name, std::string help, std::vector<std::string> label_names,
    std::function<std::unique_ptr<Cell>()> new_cell, CounterCell* arity_errors)
    : Family(std::move(name), std::move(help), std::move(label_names)),
      new_cell_(std::move(new_cell)),
      arity_errors_(arity_errors),
      discarded_(new_cell_()) {
  // An unlabeled family is one series, exported (as 0) from the start.
  if (this->label_names().empty()) {
    absl::MutexLock lock(&mu_);
    cells_.emplace(std::vector<std::string>(), new_cell_());
  }
}

template <typename Cell>
Cell* LabeledFamily<Cell>::WithLabels(
    absl::Span<const absl::string_view> label_values) {
  if (label_values.size() != label_names().size()) {
    if (arity_errors_ != nullptr) arity_errors_->Increment();
    return discarded_.get();
  }
  {
    absl::ReaderMutexLock lock(&mu_);
    auto it = cells_.find(label_values);
    if (it != cells_.end()) return it->second.get();
  }
  absl::MutexLock lock(&mu_);
  auto it = cells_.find(label_values);  // another thread may have made it
  if (it == cells_.end()) {
    it = cells_
             .emplace(std::vector<std::string>(label_values.begin(),
                                               label_values.end()),
                      new_cell_())
             .first;
  }
  return it->second.get();
}

template <typename Cell>
std::vector<std::pair<const std::vector<std::string>*, const Cell*>>
LabeledFamily<Cell>::SortedCells() const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<std::pair<const std::vector<std::string>*, const Cell*>> cells;
  cells.reserve(cells_.size());
  for (const auto& [values, cell] : cells_) {
    cells.emplace_back(&values, cell.get());
  }
  return cells;
}

template class LabeledFamily<CounterCell>;
template class LabeledFamily<GaugeCell>;
template class LabeledFamily<HistogramCell>;

}  // namespace metrics_internal

Counter::Counter(std::string name, std::string help,
                 std::vector<std::string> label_names,
                 CounterCell* arity_errors)
    : LabeledFamily(
          std::move(name), std::move(help), std::move(label_names),
          [] { return std::make_unique<CounterCell>(); }, arity_errors) {}

void Counter::AppendSamples(std::string* out) const {
  for (const auto& [values, cell] : SortedCells()) {
    AppendSample(name(), label_names(), *values, "",
                 FormatMetricValue(cell->value()), out);
  }
}

Gauge::Gauge(std::string name, std::string help,
             std::vector<std::string> label_names, CounterCell* arity_errors)
    : LabeledFamily(
          std::move(name), std::move(help), std::move(label_names),
          [] { return std::make_unique<GaugeCell>(); }, arity_errors) {}

void Gauge::AppendSamples(std::string* out) const {
  for (const auto& [values, cell] : SortedCells()) {
    AppendSample(name(), label_names(), *values, "",
                 FormatMetricValue(cell->value()), out);
  }
}

Histogram::Histogram(std::string name, std::string help,
                     std::vector<std::string> label_names,
                     std::vector<double> bounds, CounterCell* arity_errors)
    : LabeledFamily(
          std::move(name), std::move(help), std::move(label_names),
          [bounds = std::move(bounds)] {
            return std::make_unique<HistogramCell>(bounds);
          },
          arity_errors) {}

void Histogram::AppendSamples(std::string* out) const {
  const std::string bucket = absl::StrCat(name(), "_bucket");
  const std::string sum = absl::StrCat(name(), "_sum");
  const std::string count = absl::StrCat(name(), "_count");
  for (const auto& [values, cell] : SortedCells()) {
    const HistogramCell::Snapshot snapshot = cell->Read();
    for (size_t i = 0; i < snapshot.bounds.size(); ++i) {
      AppendSample(bucket, label_names(), *values,
                   FormatMetricValue(snapshot.bounds[i]),
                   FormatMetricValue(snapshot.cumulative_counts[i]), out);
    }
    AppendSample(bucket, label_names(), *values, "+Inf",
                 FormatMetricValue(snapshot.count), out);
    AppendSample(sum, label_names(), *values, "",
                 FormatMetricValue(snapshot.sum), out);
    AppendSample(count, label_names(), *values, "",
                 FormatMetricValue(snapshot.count), out);
  }
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> bounds;
  double bound = start;
  for (int i = 0; i < count; ++i) {
    bounds.push_back(bound);
    bound *= factor;
  }
  return bounds;
}

MetricsRegistry::MetricsRegistry() {
  absl::MutexLock lock(&mu_);
  absl::Status reserved = Reserve(kArityErrorsName, kArityErrorsHelp, {},
                                  /*is_histogram=*/false);
  (void)reserved;  // a fixed, valid name in an empty registry
  std::unique_ptr<Counter> family(new Counter(
      kArityErrorsName, kArityErrorsHelp, {}, /*arity_errors=*/nullptr));
  arity_errors_ = family->WithLabels({});
  families_.emplace(kArityErrorsName, std::move(family));
}

MetricsRegistry::~MetricsRegistry() = default;

absl::Status MetricsRegistry::Reserve(
    absl::string_view name, absl::string_view help,
    const std::vector<std::string>& label_names, bool is_histogram) {
  if (!IsValidMetricName(name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metric name \"", name, "\" does not match [a-zA-Z_:][a-zA-Z0-9_:]*"));
  }
  if (help.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("metric ", name, " has no help text"));
  }
  for (size_t i = 0; i < label_names.size(); ++i) {
    const std::string& label = label_names[i];
    if (!IsValidLabelName(label)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metric ", name, ": label name \"", label,
          "\" does not match [a-zA-Z_][a-zA-Z0-9_]* or starts with __"));
    }
    if (is_histogram && label == "le") {
      return absl::InvalidArgumentError(absl::StrCat(
          "metric ", name, ": label name \"le\" is reserved for buckets"));
    }
    if (std::find(label_names.begin(), label_names.begin() + i, label) !=
        label_names.begin() + i) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metric ", name, ": label name \"", label, "\" appears twice"));
    }
  }
  std::vector<std::string> series = {std::string(name)};
  if (is_histogram) {
    for (absl::string_view suffix : {"_bucket", "_sum", "_count"}) {
      series.push_back(absl::StrCat(name, suffix));
    }
  }
  for (const std::string& s : series) {
    if (series_names_.count(s) > 0) {
      return absl::AlreadyExistsError(
          absl::StrCat("metric ", name, ": series name ", s,
                       " is already taken by a registered metric"));
    }
  }
  series_names_.insert(series.begin(), series.end());
  return absl::OkStatus();
}

absl::StatusOr<Counter*> MetricsRegistry::AddCounter(
    absl::string_view name, absl::string_view help,
    std::vector<std::string> label_names) {
  if (!absl::EndsWith(name, "_total")) {
    return absl::InvalidArgumentError(
        absl::StrCat("counter name \"", name, "\" does not end in _total"));
  }
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Reserve(name, help, label_names, /*is_histogram=*/false));
  std::unique_ptr<Counter> family(
      new Counter(std::string(name), std::string(help), std::move(label_names),
                  arity_errors_));
  Counter* result = family.get();
  families_.emplace(std::string(name), std::move(family));
  return result;
}

absl::StatusOr<Gauge*> MetricsRegistry::AddGauge(
    absl::string_view name, absl::string_view help,
    std::vector<std::string> label_names) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Reserve(name, help, label_names, /*is_histogram=*/false));
  std::unique_ptr<Gauge> family(new Gauge(std::string(name), std::string(help),
                                          std::move(label_names),
                                          arity_errors_));
  Gauge* result = family.get();
  families_.emplace(std::string(name), std::move(family));
  return result;
}

absl::StatusOr<Histogram*> MetricsRegistry::AddHistogram(
    absl::string_view name, absl::string_view help,
    std::vector<std::string> label_names, std::vector<double> bounds) {
  if (!bounds.empty() && bounds.back() == INFINITY) bounds.pop_back();
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("histogram ", name, ": bucket bound ",
                       FormatMetricValue(bounds[i]), " is not finite"));
    }
    if (i > 0 && !(bounds[i - 1] < bounds[i])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "histogram ", name, ": bucket bounds are not strictly increasing (",
          FormatMetricValue(bounds[i - 1]), " then ",
          FormatMetricValue(bounds[i]), ")"));
    }
  }
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Reserve(name, help, label_names, /*is_histogram=*/true));
  std::unique_ptr<Histogram> family(
      new Histogram(std::string(name), std::string(help),
                    std::move(label_names), std::move(bounds), arity_errors_));
  Histogram* result = family.get();
  families_.emplace(std::string(name), std::move(family));
  return result;
}

absl::Status MetricsRegistry::AddCallbackGauge(
    absl::string_view name, absl::string_view help,
    std::function<double()> callback) {
  if (callback == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("callback gauge ", name, " has no callback"));
  }
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Reserve(name, help, {}, /*is_histogram=*/false));
  families_.emplace(std::string(name), std::make_unique<CallbackGauge>(
                                           std::string(name), std::string(help),
                                           std::move(callback)));
  return absl::OkStatus();
}

void MetricsRegistry::AddScrapeHook(std::function<void()> hook) {
  absl::MutexLock lock(&mu_);
  scrape_hooks_.push_back(
      std::make_shared<const std::function<void()>>(std::move(hook)));
}

std::string MetricsRegistry::Exposition() const {
  // Families are never removed, so they can be rendered after the lock is
  // released; hooks and callback gauges then run with no registry lock held.
  std::vector<const metrics_internal::Family*> families;
  std::vector<std::shared_ptr<const std::function<void()>>> hooks;
  {
    absl::ReaderMutexLock lock(&mu_);
    hooks = scrape_hooks_;
    families.reserve(families_.size());
    for (const auto& [name, family] : families_) {
      families.push_back(family.get());
    }
  }
  for (const auto& hook : hooks) (*hook)();
  std::string out;
  for (const metrics_internal::Family* family : families) {
    family->AppendExposition(&out);
  }
  return out;
}

}  // namespace distrt
