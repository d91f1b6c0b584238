//===- serve/Scheduler.cpp - Continuous batching over one model's generator -===//
//
// The loop: wait for work, admit queued requests into free rows (each
// add_row hands back the row's first token), run one next_batch over all
// rows, deliver each row's token, and release the rows that ended. A row
// ends at a stop id (finish_reason "stop", the id not delivered), at its
// max_tokens ("length"), when its request is cancelled (client gone, stop
// string found by the connection) or past its deadline.
//
//===----------------------------------------------------------------------===//
#include "serve/Scheduler.h"

#include <algorithm>

namespace onnxc::serve {

namespace {

double secondsBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

} // namespace

std::unique_ptr<Scheduler> Scheduler::create(const ModelSpec &spec, const ServeOptions &options,
                                             Metrics &metrics, std::string &error) {
  onnxc_generate_options generate;
  onnxc_generate_options_init(&generate);
  generate.max_new_tokens = options.maxTotalTokens;
  generate.num_threads = options.threads;
  generate.mapping = spec.mapping.c_str();
  generate.eos_token_ids = spec.eosTokenIds.data();
  generate.num_eos_token_ids = int32_t(spec.eosTokenIds.size());
  // The rows stay right-aligned with one of them unpadded, so the shared
  // sequence never outgrows the longest request plus its pending token; a
  // model whose graph holds fewer positions (GPT-2's table) lowers the limit.
  int64_t wanted = options.maxTotalTokens + 2, holds = wanted;
  if (onnxc_generator *probe = onnxc_generator_create(spec.model, &generate)) {
    holds = onnxc_generator_max_positions(probe, wanted);
    onnxc_generator_destroy(probe);
  }
  if (holds < 3) {
    error = "model '" + spec.name + "' holds " + std::to_string(holds) + " positions";
    return nullptr;
  }
  generate.capacity = holds;
  onnxc_generator *generator = onnxc_generator_create(spec.model, &generate);
  if (!generator) {
    error = "model '" + spec.name + "': " + onnxc_last_error();
    return nullptr;
  }
  std::unique_ptr<Scheduler> scheduler(new Scheduler(options, metrics, generator));
  scheduler->stops_ = spec.eosTokenIds;
  scheduler->maxTotalTokens_ = holds - 2;
  if (onnxc_generator_joinable(generator) != 1) {
    scheduler->serialReason_ = onnxc_generator_error(generator);
  } else if (options.maxBatch > 1) {
    if (onnxc_generator_reserve_rows(generator, options.maxBatch) != 0) {
      error = "model '" + spec.name + "': " + onnxc_generator_error(generator);
      return nullptr;
    }
    scheduler->maxRows_ = options.maxBatch;
  }
  scheduler->thread_ = std::thread([s = scheduler.get()] { s->loop(); });
  return scheduler;
}

Scheduler::Scheduler(const ServeOptions &options, Metrics &metrics, onnxc_generator *generator)
    : options_(options), metrics_(metrics), generator_(generator) {}

Scheduler::~Scheduler() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable())
    thread_.join();
  for (Row &row : rows_)
    row.generation->finish("", "the server is shutting down");
  for (auto &waiting : queue_)
    waiting->finish("", "the server is shutting down");
  onnxc_generator_destroy(generator_);
}

bool Scheduler::submit(std::shared_ptr<Generation> generation) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (int(queue_.size()) >= options_.maxQueue)
      return false;
    queue_.push_back(std::move(generation));
    metrics_.queueDepth.fetch_add(1);
  }
  wake_.notify_all();
  return true;
}

void Scheduler::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty() || !rows_.empty(); });
    if (stopping_)
      return;
    admit(lock);
    if (rows_.empty())
      continue;
    lock.unlock();
    step();
    lock.lock();
  }
}

void Scheduler::admit(std::unique_lock<std::mutex> &lock) {
  std::vector<std::shared_ptr<Generation>> joining;
  while (!queue_.empty() && int(rows_.size() + joining.size()) < maxRows_) {
    std::shared_ptr<Generation> generation = queue_.front();
    queue_.pop_front();
    metrics_.queueDepth.fetch_sub(1);
    if (generation->cancelled || Clock::now() > generation->deadline) {
      generation->finish("", generation->cancelled ? "cancelled" : "the request timed out");
      metrics_.cancelled.fetch_add(1);
      continue;
    }
    joining.push_back(std::move(generation));
  }
  if (joining.empty())
    return;
  // The waiting prompts join together: one run of the model for all of them.
  std::vector<const int64_t *> prompts;
  std::vector<int64_t> counts, firsts(joining.size());
  std::vector<onnxc_generate_options> options(joining.size());
  std::vector<const onnxc_generate_options *> optionPointers;
  for (size_t j = 0; j < joining.size(); ++j) {
    const Generation &generation = *joining[j];
    prompts.push_back(generation.prompt.data());
    counts.push_back(int64_t(generation.prompt.size()));
    onnxc_generate_options &row = options[j];
    onnxc_generate_options_init(&row);
    const SamplingRequest &sampling = generation.sampling;
    row.max_new_tokens = sampling.maxTokens;
    row.do_sample = sampling.sample ? 1 : 0;
    row.temperature = sampling.temperature;
    row.top_p = sampling.topP;
    row.top_k = sampling.topK;
    row.seed = sampling.seed;
    optionPointers.push_back(&row);
  }
  // The prompts run with the lock released: submit() must not wait on a prefill.
  lock.unlock();
  int64_t first =
      onnxc_generator_add_rows(generator_, prompts.data(), counts.data(), int64_t(joining.size()),
                               optionPointers.data(), firsts.data());
  lock.lock();
  if (first < 0) {
    for (auto &generation : joining)
      generation->finish("", onnxc_generator_error(generator_));
    return;
  }
  Clock::time_point now = Clock::now();
  for (auto &generation : joining) {
    metrics_.promptTokens.fetch_add(generation->prompt.size());
    metrics_.runningRows.fetch_add(1);
    metrics_.timeToFirstToken.observe(secondsBetween(generation->arrival, now));
    rows_.push_back({std::move(generation), 0, now});
  }
  // From the last: a row released takes the last row into its place.
  for (size_t j = firsts.size(); j-- > 0;)
    if (!deliver(size_t(first) + j, firsts[j]))
      release(size_t(first) + j);
}

bool Scheduler::deliver(size_t row, int64_t token) {
  Row &r = rows_[row];
  Generation &generation = *r.generation;
  if (generation.cancelled) {
    generation.finish("", "cancelled");
    metrics_.cancelled.fetch_add(1);
    return false;
  }
  if (std::find(stops_.begin(), stops_.end(), token) != stops_.end()) {
    generation.finish("stop");
    return false;
  }
  generation.push(token);
  metrics_.generatedTokens.fetch_add(1);
  ++r.produced;
  if (r.produced >= generation.sampling.maxTokens) {
    generation.finish("length");
    return false;
  }
  if (Clock::now() > generation.deadline) {
    generation.finish("", "the request timed out after " +
                              std::to_string(int64_t(options_.requestTimeoutSeconds)) + " s");
    metrics_.cancelled.fetch_add(1);
    return false;
  }
  return true;
}

void Scheduler::release(size_t row) {
  if (onnxc_generator_remove_row(generator_, int64_t(row)) != 0)
    rows_[row].generation->finish("", onnxc_generator_error(generator_));
  // As in the generator: the last row takes the freed index.
  rows_[row] = std::move(rows_.back());
  rows_.pop_back();
  metrics_.runningRows.fetch_sub(1);
}

void Scheduler::step() {
  // Rows cancelled while waiting for this step leave before it runs.
  for (size_t r = rows_.size(); r-- > 0;)
    if (rows_[r].generation->cancelled) {
      rows_[r].generation->finish("", "cancelled");
      metrics_.cancelled.fetch_add(1);
      release(r);
    }
  if (rows_.empty())
    return;
  std::vector<int64_t> tokens(rows_.size());
  std::vector<int32_t> produced(rows_.size());
  int status = onnxc_generator_next_batch(generator_, tokens.data(), produced.data());
  if (status < 0) {
    // A failed step leaves the generation unusable: every row gets the error.
    std::string error = onnxc_generator_error(generator_);
    for (size_t r = rows_.size(); r-- > 0;) {
      rows_[r].generation->finish("", error);
      release(r);
    }
    return;
  }
  Clock::time_point now = Clock::now();
  std::vector<bool> ended(rows_.size(), false);
  for (size_t r = 0; r < rows_.size(); ++r) {
    if (!produced[r]) {
      ended[r] = true;
      rows_[r].generation->finish("length");
      continue;
    }
    metrics_.timePerToken.observe(secondsBetween(rows_[r].last, now));
    rows_[r].last = now;
    ended[r] = !deliver(r, tokens[r]);
  }
  for (size_t r = rows_.size(); r-- > 0;)
    if (ended[r])
      release(r);
}

} // namespace onnxc::serve
