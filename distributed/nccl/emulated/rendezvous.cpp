// The emulated NCCL's bootstrap over MPI: MPI itself, unique ids, the rendezvous
// of ncclCommInitRank, the collective part of ncclCommSplit, and the progress
// engine that moves them on. No threads: every NCCL call of the process (polls of
// ncclCommGetAsyncError included) makes progress, as NCCL's bootstrap threads would.
//
// Note [Emulated NCCL rendezvous]: an id names the MPI world rank of the process
// that made it (the root) and a random tag. Each rank that joins sends the root a
// Hello (MPI_COMM_WORLD, a reserved tag); once `nranks` distinct ranks joined, the
// root answers everyone with the world ranks in NCCL rank order, and the members
// make their communicator with MPI_Comm_create_group, which involves them alone:
// any subset of the MPI job can form a communicator, as with NCCL, and a rank that
// never joins leaves the others in ncclInProgress (a caller's timeout then
// aborts), never erroring early. A split allgathers (color, key) on the parent's
// MPI communicator (non-blocking) and makes each color's communicator from the
// parent with MPI_Comm_create_group, ranks ordered by key then parent rank.
// Communicator creations finish in the order the process started them.
#include <mixt/distributed/nccl/emulated/internal.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <thread>

namespace mixt::nccl_emulated {
namespace {

constexpr char kMagic[8] = {'m', 'i', 'x', 't', 'N', 'C', 'C', 'L'};

// The bytes of an emulated ncclUniqueId (the rest of its 128 bytes are zero).
struct IdBytes {
  char magic[8];
  int32_t root;        // MPI world rank of the process that made it: it serves the rendezvous
  int32_t world_size;  // of the MPI job it was made in
  uint64_t tag[2];     // random
};
static_assert(sizeof(IdBytes) <= NCCL_UNIQUE_ID_BYTES, "an id must fit ncclUniqueId");

bool same_id(const IdBytes& a, const IdBytes& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// A member's message to the root.
struct Hello {
  IdBytes id;
  uint64_t nonce;  // tells this join apart from other joins of the same process
  int32_t nranks, rank;
};
// The root's answer, followed (on success) by `nranks` world ranks in NCCL rank order.
struct Reply {
  IdBytes id;
  uint64_t nonce;
  int32_t status;      // ncclResult_t
  int32_t nranks;
  int32_t create_tag;  // MPI_Comm_create_group's tag on MPI_COMM_WORLD
  char text[244];      // why, when status is an error
};

struct MpiState {
  bool ready = false;
  int world_rank = 0, world_size = 1;
  int hello_tag = 0, reply_tag = 0;  // the two highest tags of MPI_COMM_WORLD
} g_mpi;

// A message in flight and the bytes it sends.
struct Sent {
  std::vector<char> bytes;
  MPI_Request req = MPI_REQUEST_NULL;
};
std::deque<std::unique_ptr<Sent>> g_sent;

struct Orphan {
  std::vector<MPI_Request> reqs;
  std::shared_ptr<void> keep;
};
std::vector<Orphan> g_orphans;

// The rendezvous of an id made here whose communicator is not complete.
struct Root {
  IdBytes id{};
  int nranks = -1;
  std::vector<int> world;     // by NCCL rank, -1 until joined
  std::vector<uint64_t> nonces;
  int joined = 0;
  ncclResult_t failed = ncclSuccess;
  std::string why;
};
std::vector<Root> g_roots;
std::vector<IdBytes> g_used;  // ids whose communicator completed: later joins are refused

// A communicator creation in flight.
struct Task {
  virtual ~Task() = default;
  // Moves on; true once finished (successfully or not).
  virtual bool step(bool may_block) = 0;
};
std::deque<std::unique_ptr<Task>> g_tasks;

uint64_t random64() {
  static std::mt19937_64 gen([] {
    std::random_device rd;
    const auto t = static_cast<uint64_t>(Clock::now().time_since_epoch().count());
    return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ t ^ (static_cast<uint64_t>(getpid()) << 17);
  }());
  return gen();
}

int send_bytes(int dest, int tag, std::vector<char> bytes) {
  auto s = std::make_unique<Sent>();
  s->bytes = std::move(bytes);
  const int rc =
      MPI_Isend(s->bytes.data(), static_cast<int>(s->bytes.size()), MPI_BYTE, dest, tag, MPI_COMM_WORLD, &s->req);
  if (rc == MPI_SUCCESS) g_sent.push_back(std::move(s));
  return rc;
}

void reply(int dest, const IdBytes& id, uint64_t nonce, ncclResult_t status, const std::string& text,
           const std::vector<int>& world = {}, int create_tag = 0) {
  Reply r{};
  r.id = id;
  r.nonce = nonce;
  r.status = status;
  r.nranks = static_cast<int32_t>(world.size());
  r.create_tag = create_tag;
  std::snprintf(r.text, sizeof r.text, "%s", text.c_str());
  std::vector<char> bytes(sizeof r + world.size() * sizeof(int32_t));
  std::memcpy(bytes.data(), &r, sizeof r);
  for (size_t i = 0; i < world.size(); ++i) {
    const int32_t w = world[i];
    std::memcpy(bytes.data() + sizeof r + i * sizeof w, &w, sizeof w);
  }
  send_bytes(dest, g_mpi.reply_tag, std::move(bytes));
}

void fail_root(Root& root, ncclResult_t r, const std::string& why) {
  root.failed = r;
  root.why = why;
  for (int i = 0; i < root.nranks; ++i)
    if (root.world[i] >= 0) reply(root.world[i], root.id, root.nonces[i], r, why);
}

void on_hello(const Hello& h, int source) {
  auto it = std::find_if(g_roots.begin(), g_roots.end(), [&](const Root& r) { return same_id(r.id, h.id); });
  if (it == g_roots.end()) {
    const bool used = std::any_of(g_used.begin(), g_used.end(), [&](const IdBytes& u) { return same_id(u, h.id); });
    reply(source, h.id, h.nonce, ncclInvalidUsage,
          strf("MPI world rank %d refused rank %d's join: %s", g_mpi.world_rank, h.rank,
               used ? "the communicator of this unique id is complete already (one ncclCommInitRank per rank and id)"
                    : "this process did not make the unique id"));
    return;
  }
  Root& root = *it;
  if (root.failed != ncclSuccess) return reply(source, h.id, h.nonce, root.failed, root.why);
  if (root.nranks < 0) {
    root.nranks = h.nranks;
    root.world.assign(static_cast<size_t>(h.nranks), -1);
    root.nonces.assign(static_cast<size_t>(h.nranks), 0);
  }
  if (h.nranks != root.nranks || h.rank < 0 || h.rank >= root.nranks) {
    const std::string why = strf("ranks of one unique id disagree on nranks: %d and %d", root.nranks, h.nranks);
    fail_root(root, ncclInvalidArgument, why);
    return reply(source, h.id, h.nonce, ncclInvalidArgument, why);
  }
  if (root.world[h.rank] >= 0) {
    const std::string why = strf("rank %d of a unique id joined twice (MPI world ranks %d and %d)", h.rank,
                                 root.world[h.rank], source);
    fail_root(root, ncclInvalidUsage, why);
    return reply(source, h.id, h.nonce, ncclInvalidUsage, why);
  }
  root.world[h.rank] = source;
  root.nonces[h.rank] = h.nonce;
  if (++root.joined < root.nranks) return;
  // Any tag works (the members use it alone); spread it so overlapping creations differ.
  const int create_tag = static_cast<int>(1000 + root.id.tag[0] % 1000000);
  for (int i = 0; i < root.nranks; ++i)
    reply(root.world[i], root.id, root.nonces[i], ncclSuccess, "", root.world, create_tag);
  g_used.push_back(root.id);
  g_roots.erase(it);
}

// Gives `c` its MPI communicator (or the error of making it).
void finish_creation(ncclComm& c, int rc, MPI_Comm made, const char* what) {
  c.busy = std::max(0, c.busy - 1);
  if (rc != MPI_SUCCESS) return set_comm_error(c, mpi_result(rc), strf("%s: %s", what, mpi_error_text(rc).c_str()));
  MPI_Comm_set_errhandler(made, MPI_ERRORS_RETURN);
  int rank = -1, size = 0;
  MPI_Comm_rank(made, &rank);
  MPI_Comm_size(made, &size);
  c.mpi = made;
  if (rank != c.rank || size != c.nranks)
    set_comm_error(c, ncclInternalError, strf("%s: MPI made rank %d of %d, expected %d of %d", what, rank, size, c.rank,
                                              c.nranks));
}

MPI_Comm create_from(MPI_Comm parent, const std::vector<int>& ranks, int tag, int* rc) {
  MPI_Group all = MPI_GROUP_NULL, members = MPI_GROUP_NULL;
  MPI_Comm made = MPI_COMM_NULL;
  *rc = MPI_Comm_group(parent, &all);
  if (*rc == MPI_SUCCESS) *rc = MPI_Group_incl(all, static_cast<int>(ranks.size()), ranks.data(), &members);
  if (*rc == MPI_SUCCESS) *rc = MPI_Comm_create_group(parent, members, tag, &made);
  if (members != MPI_GROUP_NULL) MPI_Group_free(&members);
  if (all != MPI_GROUP_NULL) MPI_Group_free(&all);
  return made;
}

struct InitTask final : Task {
  std::shared_ptr<ncclComm> comm;
  IdBytes id{};
  uint64_t nonce = 0;
  bool answered = false;
  ncclResult_t status = ncclSuccess;
  std::string why;
  std::vector<int> world;
  int create_tag = 0;

  bool step(bool may_block) override {
    if (!answered) return false;
    if (status != ncclSuccess) {
      comm->busy = 0;
      set_comm_error(*comm, status, "ncclCommInitRank: " + why);
      return true;
    }
    if (!may_block) return false;
    int rc = MPI_SUCCESS;
    const MPI_Comm made = create_from(MPI_COMM_WORLD, world, create_tag, &rc);
    finish_creation(*comm, rc, made, "ncclCommInitRank: MPI_Comm_create_group");
    return true;
  }
};

struct SplitTask final : Task {
  std::shared_ptr<ncclComm> parent, child;  // child: null for NCCL_SPLIT_NOCOLOR
  int color = 0, tag = 0;
  std::shared_ptr<std::vector<int32_t>> buf;  // [0, 2): this rank's (color, key); then every rank's
  MPI_Request req = MPI_REQUEST_NULL;
  bool gathered = false;
  std::vector<int> members;  // parent ranks of the new communicator, in its rank order

  bool step(bool may_block) override {
    if (!gathered) {
      int flag = 0;
      const int rc = MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) {
        const std::string why = "ncclCommSplit: " + mpi_error_text(rc);
        set_comm_error(*parent, mpi_result(rc), why);
        if (child) {
          set_comm_error(*child, mpi_result(rc), why);
          child->busy = 0;
        }
        parent->busy = std::max(0, parent->busy - 1);
        return true;
      }
      if (!flag) return false;
      gathered = true;
      // NCCL's order: by key, ties by parent rank.
      const int32_t* all = buf->data() + 2;
      for (int r = 0; r < parent->nranks; ++r) {
        if (all[2 * r] != color) continue;
        auto at = members.begin();
        while (at != members.end() && all[2 * *at + 1] <= all[2 * r + 1]) ++at;
        members.insert(at, r);
      }
    }
    if (child && !may_block) return false;
    if (child) {
      int rc = MPI_SUCCESS;
      MPI_Comm made = create_from(parent->mpi, members, tag, &rc);
      child->rank = static_cast<int>(std::find(members.begin(), members.end(), parent->rank) - members.begin());
      child->nranks = static_cast<int>(members.size());
      if (child->aborted) {  // aborted while splitting: it took part for the others' sake
        if (rc == MPI_SUCCESS && made != MPI_COMM_NULL) MPI_Comm_free(&made);
      } else {
        finish_creation(*child, rc, made, "ncclCommSplit: MPI_Comm_create_group");
      }
    }
    parent->busy = std::max(0, parent->busy - 1);
    return true;
  }
};

void on_reply(const std::vector<char>& bytes) {
  if (bytes.size() < sizeof(Reply)) return;
  Reply r;
  std::memcpy(&r, bytes.data(), sizeof r);
  for (auto& t : g_tasks) {
    auto* init = dynamic_cast<InitTask*>(t.get());
    if (init == nullptr || init->answered || init->nonce != r.nonce || !same_id(init->id, r.id)) continue;
    init->answered = true;
    init->status = static_cast<ncclResult_t>(r.status);
    init->why.assign(r.text, strnlen(r.text, sizeof r.text));
    if (init->status == ncclSuccess) {
      if (r.nranks != init->comm->nranks || bytes.size() != sizeof r + static_cast<size_t>(r.nranks) * 4) {
        init->status = ncclInternalError;
        init->why = "the rendezvous answered a malformed rank table";
        return;
      }
      init->world.resize(static_cast<size_t>(r.nranks));
      std::memcpy(init->world.data(), bytes.data() + sizeof r, init->world.size() * sizeof(int32_t));
      init->create_tag = r.create_tag;
    }
    return;
  }
  // No join waits for it (aborted): dropped.
}

void finalize_at_exit() {
  std::lock_guard lock(state_mutex());
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Finalize();
}

}  // namespace

bool mpi_alive() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

ncclResult_t ensure_mpi() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (fin)
    return fail(ncclSystemError, "MPI was finalized in this process; the emulated NCCL talks to its peers through MPI");
  if (!init) {
    int provided = 0;
    const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS) return fail(ncclSystemError, "MPI_Init_thread failed: " + mpi_error_text(rc));
    std::atexit(finalize_at_exit);
  }
  if (!g_mpi.ready) {
    MPI_Comm_rank(MPI_COMM_WORLD, &g_mpi.world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_mpi.world_size);
    int* ub = nullptr;
    int flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    const int top = flag && ub ? *ub : 32767;
    g_mpi.hello_tag = top;
    g_mpi.reply_tag = top - 1;
    g_mpi.ready = true;
  }
  return ncclSuccess;
}

ncclResult_t make_unique_id(ncclUniqueId* out) {
  if (const ncclResult_t r = ensure_mpi(); r != ncclSuccess) return r;
  IdBytes id{};
  std::memcpy(id.magic, kMagic, sizeof kMagic);
  id.root = g_mpi.world_rank;
  id.world_size = g_mpi.world_size;
  id.tag[0] = random64();
  id.tag[1] = random64();
  std::memset(out, 0, sizeof *out);
  std::memcpy(out->internal, &id, sizeof id);
  Root root;
  root.id = id;
  g_roots.push_back(std::move(root));
  return ncclSuccess;
}

ncclResult_t start_init(const std::shared_ptr<ncclComm>& c, const ncclUniqueId& uid, int nranks, int rank) {
  IdBytes id;
  std::memcpy(&id, uid.internal, sizeof id);
  if (std::memcmp(id.magic, kMagic, sizeof kMagic) != 0)
    return fail(ncclInvalidArgument,
                "ncclCommInitRank: the unique id was not made by ncclGetUniqueId (the emulated NCCL's)");
  if (id.world_size != g_mpi.world_size || id.root < 0 || id.root >= g_mpi.world_size)
    return fail(ncclInvalidArgument,
                strf("ncclCommInitRank: the unique id was made in another MPI job (of %d processes; "
                     "this one has %d): the emulated NCCL finds its peers through MPI_COMM_WORLD",
                     id.world_size, g_mpi.world_size));
  c->busy = 1;
  if (nranks == 1) {  // nobody to wait for
    MPI_Comm made = MPI_COMM_NULL;
    const int rc = MPI_Comm_dup(MPI_COMM_SELF, &made);
    finish_creation(*c, rc, made, "ncclCommInitRank: MPI_Comm_dup");
    return ncclSuccess;
  }
  auto task = std::make_unique<InitTask>();
  task->comm = c;
  task->id = id;
  task->nonce = random64();
  Hello h{};
  h.id = id;
  h.nonce = task->nonce;
  h.nranks = nranks;
  h.rank = rank;
  std::vector<char> bytes(sizeof h);
  std::memcpy(bytes.data(), &h, sizeof h);
  if (const int rc = send_bytes(id.root, g_mpi.hello_tag, std::move(bytes)); rc != MPI_SUCCESS) {
    c->busy = 0;
    return fail(mpi_result(rc), strf("ncclCommInitRank: joining at MPI world rank %d: %s", id.root,
                                     mpi_error_text(rc).c_str()));
  }
  g_tasks.push_back(std::move(task));
  return ncclSuccess;
}

ncclResult_t start_split(const std::shared_ptr<ncclComm>& parent, const std::shared_ptr<ncclComm>& child, int color,
                         int key) {
  auto task = std::make_unique<SplitTask>();
  task->parent = parent;
  task->child = child;
  task->color = color;
  task->tag = static_cast<int>(1000 + parent->splits++ % 1000000);
  task->buf = std::make_shared<std::vector<int32_t>>(2 + 2 * static_cast<size_t>(parent->nranks));
  (*task->buf)[0] = color;
  (*task->buf)[1] = key;
  const int rc = MPI_Iallgather(task->buf->data(), 2, MPI_INT32_T, task->buf->data() + 2, 2, MPI_INT32_T, parent->mpi,
                                &task->req);
  if (rc != MPI_SUCCESS) {
    set_comm_error(*parent, mpi_result(rc), "ncclCommSplit: " + mpi_error_text(rc));
    return fail(mpi_result(rc), "ncclCommSplit: " + mpi_error_text(rc));
  }
  parent->busy += 1;
  if (child) child->busy = 1;
  g_tasks.push_back(std::move(task));
  return ncclSuccess;
}

void drop_tasks(const ncclComm& c) {
  for (auto it = g_tasks.begin(); it != g_tasks.end();) {
    if (auto* init = dynamic_cast<InitTask*>(it->get()); init && init->comm.get() == &c) {
      // A rendezvous served here cannot complete without this rank: refuse it to all.
      for (Root& root : g_roots)
        if (same_id(root.id, init->id))
          fail_root(root, ncclRemoteError, strf("rank %d aborted its communicator while joining", c.rank));
      it = g_tasks.erase(it);
      continue;
    }
    if (auto* split = dynamic_cast<SplitTask*>(it->get()); split && split->parent.get() == &c) {
      if (!split->gathered) orphan({split->req}, split->buf, false);
      if (split->child) {
        split->child->busy = 0;
        set_comm_error(*split->child, ncclInvalidUsage, "ncclCommSplit: the parent communicator was aborted");
      }
      it = g_tasks.erase(it);
      continue;
    }
    ++it;
  }
}

void orphan(std::vector<MPI_Request> requests, std::shared_ptr<void> buffers, bool cancel) {
  if (!mpi_alive()) return;
  if (cancel)
    for (MPI_Request& r : requests)
      if (r != MPI_REQUEST_NULL) MPI_Cancel(&r);
  g_orphans.push_back({std::move(requests), std::move(buffers)});
}

void progress(bool may_block) {
  if (!g_mpi.ready || !mpi_alive()) return;
  std::erase_if(g_sent, [](const std::unique_ptr<Sent>& s) {
    int flag = 0;
    return MPI_Test(&s->req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS || flag;
  });
  std::erase_if(g_orphans, [](Orphan& o) {
    int flag = 0;
    return MPI_Testall(static_cast<int>(o.reqs.size()), o.reqs.data(), &flag, MPI_STATUSES_IGNORE) != MPI_SUCCESS ||
           flag;
  });
  for (;;) {  // joins of the rendezvous served here
    int flag = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, g_mpi.hello_tag, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS || !flag) break;
    int bytes = 0;
    MPI_Get_count(&st, MPI_BYTE, &bytes);
    std::vector<char> buf(static_cast<size_t>(std::max(bytes, 0)));
    MPI_Recv(buf.data(), bytes, MPI_BYTE, st.MPI_SOURCE, g_mpi.hello_tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (buf.size() != sizeof(Hello)) continue;
    Hello h;
    std::memcpy(&h, buf.data(), sizeof h);
    on_hello(h, st.MPI_SOURCE);
  }
  for (;;) {  // answers to the joins started here
    int flag = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, g_mpi.reply_tag, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS || !flag) break;
    int bytes = 0;
    MPI_Get_count(&st, MPI_BYTE, &bytes);
    std::vector<char> buf(static_cast<size_t>(std::max(bytes, 0)));
    MPI_Recv(buf.data(), bytes, MPI_BYTE, st.MPI_SOURCE, g_mpi.reply_tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    on_reply(buf);
  }
  // Only the oldest unfinished creation may block (creations finish in the order they started).
  bool first = true;
  for (auto it = g_tasks.begin(); it != g_tasks.end();) {
    if ((*it)->step(may_block && first)) {
      it = g_tasks.erase(it);
    } else {
      first = false;
      ++it;
    }
  }
}

double peer_timeout_seconds() {
  const char* v = std::getenv("MIXT_EMULATED_NCCL_TIMEOUT");
  if (v == nullptr || *v == '\0') return 300;
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  return end != v && s >= 0 ? s : 300;
}

void Pause::operator()() {
  if (++rounds_ < 64) {
    std::this_thread::yield();
    return;
  }
  const int us = std::min(1000, 10 * (rounds_ - 63));
  std::this_thread::sleep_for(std::chrono::microseconds(us));
}

}  // namespace mixt::nccl_emulated
