#ifndef DISTRT_RUNTIME_INPUT_ORDERED_PARALLEL_MAP_H_
#define DISTRT_RUNTIME_INPUT_ORDERED_PARALLEL_MAP_H_

// OrderedParallelMap: tf.data's map(fn, num_parallel_calls) with
// deterministic=True. One producer pushes inputs, a pool of threads applies
// `fn` to them, and one consumer pops the outputs in the order the inputs
// were pushed, whatever the number of threads and however long each call
// takes. Callers batch their items into chunks so that the locking here is
// paid once per chunk, not per item.
//
// At most `max_in_flight` inputs are pushed and not yet popped: Push waits
// for room, so memory is bounded by the window, not by the producer's
// speed.
//
// Threads: Push/Close from one producer thread, Pop from one consumer
// thread (at a time); Cancel from any thread. The pool's threads are owned
// by the map; the destructor cancels and joins them (a call of `fn` in
// progress finishes first).

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

namespace distrt {

template <typename In, typename Out>
class OrderedParallelMap {
 public:
  // num_threads >= 1, max_in_flight >= 1. `fn` is called on the pool's
  // threads, several at once.
  OrderedParallelMap(int num_threads, int max_in_flight,
                     std::function<Out(In)> fn)
      : max_in_flight_(static_cast<size_t>(max_in_flight)), fn_(std::move(fn)) {
    threads_.reserve(num_threads);
    for (int i = 0; i < num_threads; ++i) {
      threads_.emplace_back(&OrderedParallelMap::Work, this);
    }
  }

  ~OrderedParallelMap() {
    Cancel();
    for (std::thread& thread : threads_) thread.join();
  }

  OrderedParallelMap(const OrderedParallelMap&) = delete;
  OrderedParallelMap& operator=(const OrderedParallelMap&) = delete;

  // Queues `input`, waiting while max_in_flight are in flight. False (and
  // `input` dropped) once cancelled.
  bool Push(In input) {
    std::unique_lock<std::mutex> lock(mu_);
    room_.wait(
        lock, [this] { return cancelled_ || window_.size() < max_in_flight_; });
    if (cancelled_) return false;
    window_.emplace_back();
    window_.back().input.emplace(std::move(input));
    lock.unlock();
    work_.notify_one();
    return true;
  }

  // No more inputs: Pop returns nullopt once every output was popped.
  void Close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
    }
    done_.notify_all();
  }

  // The output of the oldest input not yet popped, waiting for it; nullopt
  // after Close() once all were popped, and at once after Cancel().
  std::optional<Out> Pop() {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] {
      return cancelled_ || (!window_.empty() && window_.front().done) ||
             (closed_ && window_.empty());
    });
    if (cancelled_ || window_.empty()) return std::nullopt;
    std::optional<Out> out = std::move(window_.front().output);
    window_.pop_front();
    --next_to_start_;
    lock.unlock();
    room_.notify_one();
    return out;
  }

  // Wakes every waiter: Push returns false and Pop nullopt from now on.
  // Calls of `fn` in progress finish; their results are dropped.
  void Cancel() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
    }
    room_.notify_all();
    work_.notify_all();
    done_.notify_all();
  }

 private:
  struct Entry {
    std::optional<In> input;  // until a thread takes it
    std::optional<Out> output;
    bool done = false;
  };

  void Work() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      work_.wait(lock, [this] {
        return cancelled_ || next_to_start_ < window_.size();
      });
      if (cancelled_) return;
      // std::deque keeps references to its elements valid across
      // push_back and pop_front, and this entry is not popped before it is
      // done.
      Entry& entry = window_[next_to_start_++];
      In input = std::move(*entry.input);
      entry.input.reset();
      lock.unlock();
      Out output = fn_(std::move(input));
      lock.lock();
      entry.output.emplace(std::move(output));
      entry.done = true;
      done_.notify_all();
    }
  }

  const size_t max_in_flight_;
  const std::function<Out(In)> fn_;

  std::mutex mu_;
  std::condition_variable room_;  // window_ below max_in_flight_, or cancel
  std::condition_variable work_;  // an input to start, or cancel
  std::condition_variable done_;  // the front is done, closed, or cancel
  // Guarded by mu_: the inputs pushed and not popped, oldest first;
  // window_[0, next_to_start_) were taken by a thread.
  std::deque<Entry> window_;
  size_t next_to_start_ = 0;
  bool closed_ = false;
  bool cancelled_ = false;

  std::vector<std::thread> threads_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_ORDERED_PARALLEL_MAP_H_
