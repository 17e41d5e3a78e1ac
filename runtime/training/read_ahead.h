#ifndef DISTRT_RUNTIME_TRAINING_READ_AHEAD_H_
#define DISTRT_RUNTIME_TRAINING_READ_AHEAD_H_

// ReadAhead: each replica's values for its next step (whole dense
// variables, the rows of row-sparse ones), read during this step. Under
// ParameterServerStrategy a step then waits for one round of requests to
// the ps tasks instead of two (the push, with the next step's reads beside
// it, instead of a read round and then a push round). Two ways in:
// - Start: on a thread of the replica's own, while the replica pushes this
//   step's updates (TrainStep with several replicas, or pushes in the
//   background);
// - Put: the reads went in the same round as the updates
//   (ReplicaContext::ApplyGradientsThenRead: TrainStep with one replica
//   and pushes in the foreground), each ps task's after its updates.
//
// The price is staleness: a read that overlaps a step's push may or may
// not see that push, so a step may compute with values that lack this
// worker's own previous step (at most that one step; other workers'
// updates are unordered under asynchronous parameter servers anyway).
// Reads Put after their round see its updates where they went in one
// bundle with them (small requests; ParameterServers::Update says
// which go apart and may not).
// TrainingLoopOptions::read_ahead (the worker's --read_ahead) turns it on.
//
// Thread-safe for distinct replicas: replica r's thread calls Start(r),
// Put(r) and Take(r), with 0 <= r < num_replicas() (TrainStep checks the
// count).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "runtime/models/model.h"

namespace distrt {

class ReadAhead {
 public:
  // Fills `values` (one slice per model variable, their ids set) with what
  // the step reads.
  using ReadFn = std::function<absl::Status(std::vector<VariableSlice>&)>;

  explicit ReadAhead(int num_replicas);
  // Waits for reads still in flight.
  ~ReadAhead();
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  int num_replicas() const { return num_replicas_; }

  // Starts replica `replica`'s read of `values` (whose slices carry the
  // next batch's ids) with `read`, on the replica's thread. A read the
  // replica started before and did not take is waited for and dropped.
  void Start(int replica, std::vector<VariableSlice> values, ReadFn read);

  // Gives replica `replica` `values` (one slice per model variable, ids and
  // rows set) as the read of its next step, made by its own thread: the
  // next step's reads that went out with this step's updates
  // (ReplicaContext::ApplyGradientsThenRead). A read started before and not
  // taken is waited for and dropped.
  void Put(int replica, std::vector<VariableSlice> values);

  // Waits for replica `replica`'s read and returns its values when it read
  // exactly the rows of `ids` (ids[i]: variable i's, as Model::SparseIds
  // gives them) and succeeded; nullopt when none was started, it read other
  // ids, or it failed: the caller then reads as without read-ahead (and
  // meets the error itself, if it persists).
  std::optional<std::vector<VariableSlice>> Take(
      int replica, const std::vector<std::vector<int64_t>>& ids);

  // Reads taken and reads dropped (other ids, or failed) so far, over all
  // replicas.
  int64_t num_taken() const { return Total(&Replica::taken); }
  int64_t num_dropped() const { return Total(&Replica::dropped); }

 private:
  // A replica's reads, made one at a time on a thread of its own that
  // lives as long as the ReadAhead (started at the first read): starting a
  // thread per step would cost more than some steps' reads.
  struct Replica {
    absl::Mutex mu;
    ReadFn read ABSL_GUARDED_BY(mu);        // set while a read waits to start
    bool busy ABSL_GUARDED_BY(mu) = false;  // a read started, not done
    bool has_result ABSL_GUARDED_BY(mu) = false;  // done, not taken
    bool stop ABSL_GUARDED_BY(mu) = false;
    // The read's values, written by the thread while `busy`.
    std::vector<VariableSlice> values;
    absl::Status status;
    int64_t taken ABSL_GUARDED_BY(mu) = 0;
    int64_t dropped ABSL_GUARDED_BY(mu) = 0;
    std::thread thread;
  };
  // Waits for the read in flight, if any, and drops a result not taken.
  static void DropPrevious(Replica& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(r.mu);
  // The replica's thread: runs each read it is given until told to stop.
  static void Serve(Replica* r);
  // `count` summed over the replicas.
  int64_t Total(int64_t Replica::*count) const;

  const int num_replicas_;
  std::unique_ptr<Replica[]> replicas_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_TRAINING_READ_AHEAD_H_
