/*
 * rmm/mr/detail/rmm_rs_resource.hpp: what every RAPIDS-shaped rmm::mr resource of rmm-rs is
 * underneath: a shared, counted reference to an rmm-rs resource handle (rmmResource_t), with the
 * member functions and properties of CCCL's cuda::mr::resource concept. Copies share the
 * resource, as RAPIDS RMM 26.x's cuda::mr::shared_resource does.
 *
 * An upstream given to a suballocator or adaptor is used as it is when it is an rmm-rs resource
 * object (rmm::mr::rmm_rs_resource or a class derived from it). Any other resource satisfying
 * cuda::mr::resource_with<R, cuda::mr::device_accessible> (a user's resource, a
 * cuda::mr::any_resource, a device_async_resource_ref) is copied into a
 * cuda::mr::any_resource and reached through an rmm-rs callback resource
 * (rmmCallbackResourceCreate) that calls its allocate and deallocate.
 */
#ifndef RMM_MR_DETAIL_RMM_RS_RESOURCE_HPP
#define RMM_MR_DETAIL_RMM_RS_RESOURCE_HPP

#include "../../aligned.hpp"
#include "../../detail/exec_check_disable.hpp"
#include "../../cuda_device.hpp"
#include "../../cuda_stream_view.hpp"
#include "../../resource_ref.hpp"

#include <exception>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace rmm {
namespace mr {

class rmm_rs_resource;

namespace detail {

using any_device_resource = cuda::mr::any_resource<cuda::mr::device_accessible>;

class upstream_binding;

/// The exception a C++ upstream threw inside rmm-rs on this thread, not yet rethrown. rmm-rs
/// sees a failed allocation (NULL) and unwinds nothing; the allocate() of the rmm-rs resource
/// that called in then rethrows it, so the caller catches what the upstream threw
/// (rmm::bad_alloc, rmm::out_of_memory, its own type), as with RAPIDS' resources.
inline std::exception_ptr &pending_upstream_exception() noexcept {
  thread_local std::exception_ptr pending;
  return pending;
}

/// A resource creator's status: refused arguments, or a feature the device lacks, are a broken
/// precondition, rmm::logic_error as in RAPIDS RMM; other failures as check().
inline void check_creation(rmmError_t status, const char *what) {
  if (status == RMM_ERROR_INVALID_ARGUMENT || status == RMM_ERROR_NOT_SUPPORTED) {
    throw logic_error(rmm::detail::describe(status, what));
  }
  check(status, what);
}

/// Takes the pending upstream exception (none: a null pointer).
inline std::exception_ptr take_pending_upstream_exception() noexcept {
  return std::exchange(pending_upstream_exception(), nullptr);
}

// A resource that the C API reaches: an rmm-rs handle, its upstream, and C++ objects it calls
// into.
struct handle_state {
  handle_state(rmmResource_t owned, std::shared_ptr<upstream_binding> from) noexcept
      : handle(owned), upstream(std::move(from)) {}
  handle_state(handle_state const &) = delete;
  handle_state &operator=(handle_state const &) = delete;
  // The handle goes first: a suballocator gives its memory back upstream when it goes, and
  // its upstream must still be there.
  ~handle_state() { (void)rmmResourceDestroy(handle); }

  rmmResource_t handle;
  std::shared_ptr<upstream_binding> upstream;  // none for a device resource
  std::vector<std::shared_ptr<const void>> kept;
};

// An upstream as the C API sees it: `handle` (borrowed from the upstream's own rmm-rs object,
// or a callback resource owned here), and the upstream object itself, which
// get_upstream_resource() refers to and a callback resource calls. The callback resource holds
// its own reference to the object (released when the resource goes, which may be after this
// binding: while memory from it is still live).
class upstream_binding {
 public:
  upstream_binding(upstream_binding const &) = delete;
  upstream_binding &operator=(upstream_binding const &) = delete;
  ~upstream_binding() {
    if (callback_ != nullptr) (void)rmmResourceDestroy(callback_);
  }

  template <class Resource>
  static std::shared_ptr<upstream_binding> of(Resource const &upstream, int device);

  rmmResource_t handle() const noexcept { return callback_ != nullptr ? callback_ : borrowed_; }
  device_async_resource_ref ref() const noexcept { return device_async_resource_ref{*resource_}; }

  /// Hands the callback resource's handle to the caller, who destroys it.
  rmmResource_t give_up_callback() noexcept {
    borrowed_ = callback_;
    callback_ = nullptr;
    return borrowed_;
  }

 private:
  // What the callback resource's user_data points to: a reference of its own to the upstream.
  using callee = std::shared_ptr<any_device_resource>;

  explicit upstream_binding(any_device_resource resource)
      : resource_(std::make_shared<any_device_resource>(std::move(resource))) {}

  // The C callbacks of a foreign upstream, given the alignment each request asks for. They
  // must not unwind into rmm-rs: an exception from the upstream's allocate is out of memory to
  // rmm-rs (NULL), which releases what the device's suballocators keep free and retries before
  // it fails; the exception itself waits in pending_upstream_exception() for the caller.
  static void *allocate_callback(std::size_t bytes, std::size_t alignment, cudaStream_t stream, void *user) noexcept {
    try {
      void *ptr = (*static_cast<callee *>(user))->allocate(cuda::stream_ref{stream}, bytes, alignment);
      pending_upstream_exception() = nullptr;  // a retry that succeeded
      return ptr;
    } catch (...) {
      pending_upstream_exception() = std::current_exception();
      return nullptr;
    }
  }
  static void deallocate_callback(void *ptr, std::size_t bytes, std::size_t alignment, cudaStream_t stream,
                                  void *user) noexcept {
    (*static_cast<callee *>(user))->deallocate(cuda::stream_ref{stream}, ptr, bytes, alignment);
  }
  static void release_callback(void *user) noexcept { delete static_cast<callee *>(user); }

  std::shared_ptr<any_device_resource> resource_;
  rmmResource_t borrowed_{nullptr};
  rmmResource_t callback_{nullptr};
};

template <class Resource>
inline constexpr bool is_rmm_rs_resource = std::is_base_of<rmm_rs_resource, std::decay_t<Resource>>::value;

// Resources a suballocator or adaptor takes as its upstream.
template <class Resource>
using if_device_resource =
    std::enable_if_t<cuda::mr::resource_with<std::decay_t<Resource>, cuda::mr::device_accessible>, int>;

}  // namespace detail

/// An rmm-rs resource as a RAPIDS RMM 26.x resource: copyable with shared ownership, and a
/// cuda::mr::resource with cuda::mr::device_accessible. Every rmm::mr resource class derives
/// from it; `rmm_rs_resource(handle)` adopts a handle that the C API made (the object then owns
/// that reference), so resources built in C can be used from this layer too.
///
/// Alignment: every allocation is aligned to 256 bytes. A larger alignment asked of allocate()
/// goes down the stack (rmmResourceAllocateAligned): pools, expandable resources and aligned
/// adaptors place it, adaptors pass it on, a C++ upstream gets it; any other resource refuses
/// it with rmm::bad_alloc, as RAPIDS' cuda_memory_resource does. Equality: two objects are
/// equal when they share one rmm-rs resource, and only then may one free the other's memory.
class rmm_rs_resource {
 public:
  explicit rmm_rs_resource(rmmResource_t owned) : state_(std::make_shared<detail::handle_state>(owned, nullptr)) {
    if (owned == nullptr) throw logic_error("rmm_rs_resource: a null rmmResource_t");
  }

  // Moving is copying, and it does not promise noexcept on purpose. A moved-from object still
  // shares the resource. A cuda::mr::any_resource then keeps the object on the heap, not in
  // its own buffer, so a resource_ref taken to what an any_resource holds stays valid when the
  // any_resource is moved: RAPIDS' device_buffer and the per-device map move theirs, and code
  // written for RAPIDS RMM keeps such refs.
  //
  // CCCL's any_resource copies the object in __host__ __device__ code that only runs on the
  // host; nvcc warns (#20011-D, an error under RAPIDS' -Werror=all-warnings) unless the copy
  // is __host__ __device__ too, with its checks off.
  RMM_EXEC_CHECK_DISABLE
  RMM_DETAIL_HOST_DEVICE rmm_rs_resource(rmm_rs_resource const &other) noexcept(false) : state_(other.state_) {}
  rmm_rs_resource &operator=(rmm_rs_resource const &other) = default;

  void *allocate(cuda::stream_ref stream, std::size_t bytes,
                 std::size_t alignment = CUDA_ALLOCATION_ALIGNMENT) const {
    check_alignment(alignment);
    void *ptr = nullptr;
    rmmError_t const status = alignment <= CUDA_ALLOCATION_ALIGNMENT
                                  ? rmmResourceAllocate(handle(), &ptr, bytes, stream.get())
                                  : rmmResourceAllocateAligned(handle(), &ptr, bytes, alignment, stream.get());
    if (status != RMM_SUCCESS) {
      if (auto thrown = detail::take_pending_upstream_exception()) std::rethrow_exception(thrown);
      // An alignment no resource of the stack places: RAPIDS' resources throw bad_alloc.
      if (status == RMM_ERROR_NOT_SUPPORTED) throw bad_alloc(status, rmm::detail::describe(status, "rmmResourceAllocateAligned"));
      check_alloc(status, "rmmResourceAllocate");
    }
    return ptr;
  }
  /// A pointer this resource did not hand out, or the wrong size, is refused with nothing freed
  /// (rmmGetLastErrorMessage() says why): a deallocation cannot throw.
  void deallocate(cuda::stream_ref stream, void *ptr, std::size_t bytes,
                  std::size_t alignment = CUDA_ALLOCATION_ALIGNMENT) const noexcept {
    if (alignment <= CUDA_ALLOCATION_ALIGNMENT) {
      (void)rmmResourceDeallocate(handle(), ptr, bytes, stream.get());
    } else {
      (void)rmmResourceDeallocateAligned(handle(), ptr, bytes, alignment, stream.get());
    }
  }
  /// Memory usable at once from any stream: allocated in the order of the legacy default
  /// stream, which is then synchronized.
  void *allocate_sync(std::size_t bytes, std::size_t alignment = CUDA_ALLOCATION_ALIGNMENT) const {
    return allocate_sync_through(*this, bytes, alignment);
  }
  /// For memory no stream still uses.
  void deallocate_sync(void *ptr, std::size_t bytes, std::size_t alignment = CUDA_ALLOCATION_ALIGNMENT) const noexcept {
    deallocate(cuda::stream_ref{cudaStream_t{}}, ptr, bytes, alignment);
  }

  friend bool operator==(rmm_rs_resource const &a, rmm_rs_resource const &b) noexcept {
    return a.handle() == b.handle();
  }
  friend bool operator!=(rmm_rs_resource const &a, rmm_rs_resource const &b) noexcept { return !(a == b); }
  friend void get_property(rmm_rs_resource const &, cuda::mr::device_accessible) noexcept {}

  /// The rmm-rs handle, still owned by this object (and its copies): for the C API.
  rmmResource_t handle() const noexcept { return state_->handle; }
  /// The kind ("pool", "statistics", ...; see rmmResourceGetName).
  std::string name() const {
    const char *kind = nullptr;
    check(rmmResourceGetName(handle(), &kind), "rmmResourceGetName");
    return kind;
  }

 protected:
  struct made {
    rmmResource_t handle;
    std::shared_ptr<detail::upstream_binding> upstream;
  };

  explicit rmm_rs_resource(made resource)
      : state_(std::make_shared<detail::handle_state>(resource.handle, std::move(resource.upstream))) {}

  /// Makes a resource over `upstream` with `create(upstream_handle, &out)` (an rmm-rs creator).
  template <class Upstream, class Create>
  static made over(Upstream const &upstream, Create &&create, const char *what) {
    auto binding = detail::upstream_binding::of(upstream, get_current_cuda_device().value());
    rmmResource_t handle = nullptr;
    check_arguments(create(binding->handle(), &handle), what);
    return made{handle, std::move(binding)};
  }

  /// A callback resource that calls `resource` (not an rmm-rs resource: share one by copying).
  template <class Resource>
  static made calling(Resource const &resource) {
    static_assert(!detail::is_rmm_rs_resource<Resource>, "an rmm-rs resource is shared by copying it");
    auto binding = detail::upstream_binding::of(resource, get_current_cuda_device().value());
    rmmResource_t handle = binding->give_up_callback();
    return made{handle, std::move(binding)};
  }

  /// Makes a resource with `create(&out)`.
  template <class Create>
  static made create(Create &&create_call, const char *what) {
    rmmResource_t handle = nullptr;
    check_arguments(create_call(&handle), what);
    return made{handle, nullptr};
  }

  device_async_resource_ref upstream_ref() const noexcept { return state_->upstream->ref(); }

  /// allocate_sync of a class that has an allocate of its own: its allocate on the legacy
  /// default stream, which is then synchronized.
  template <class Self>
  static void *allocate_sync_through(Self const &self, std::size_t bytes, std::size_t alignment) {
    void *ptr = self.allocate(cuda::stream_ref{cudaStream_t{}}, bytes, alignment);
    check(rmmStreamSynchronize(cudaStream_t{}), "rmmStreamSynchronize");
    return ptr;
  }

  /// More state the C resource points into (a callback's), kept as long as the resource.
  void keep(std::shared_ptr<const void> state) { state_->kept.push_back(std::move(state)); }

 private:
  static void check_arguments(rmmError_t status, const char *what) { detail::check_creation(status, what); }

  static void check_alignment(std::size_t alignment) {
    if (!is_supported_alignment(alignment)) {
      throw bad_alloc("alignment " + std::to_string(alignment) + " is not a power of two");
    }
  }

  std::shared_ptr<detail::handle_state> state_;
};

namespace detail {

template <class Resource>
std::shared_ptr<upstream_binding> upstream_binding::of(Resource const &upstream, int device) {
  std::shared_ptr<upstream_binding> binding(new upstream_binding(any_device_resource{upstream}));
  if constexpr (is_rmm_rs_resource<Resource>) {
    binding->borrowed_ = upstream.handle();
  } else {
    auto *user = new callee(binding->resource_);
    rmmError_t const status =
        rmmCallbackResourceCreateAligned(&upstream_binding::allocate_callback, &upstream_binding::deallocate_callback,
                                         &upstream_binding::release_callback, user, device, &binding->callback_);
    if (status != RMM_SUCCESS) {
      delete user;  // not released by a resource that was never made
      check(status, "rmmCallbackResourceCreateAligned");
    }
  }
  return binding;
}

}  // namespace detail

static_assert(!std::is_nothrow_move_constructible<rmm_rs_resource>::value,
              "any_resource must keep rmm-rs resources on the heap (see the copy constructor)");
static_assert(cuda::mr::resource_with<rmm_rs_resource, cuda::mr::device_accessible>,
              "rmm_rs_resource must satisfy cuda::mr::resource");

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_DETAIL_RMM_RS_RESOURCE_HPP
