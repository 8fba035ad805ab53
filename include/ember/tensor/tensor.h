// Tensors: a shape, a dtype, a device, and either memory (a concrete tensor) or a trace
// (a symbolic tensor: which operator produces it, and which of its outputs it is).
//
// Tensors with memory are row-major and contiguous (the plain layout); a view with other
// strides is not a Tensor (the torch bridge refuses non-contiguous memory, see
// docs/tensors.md). Inside a traced graph a value may have another layout
// (ember/ir/layout.h), made by ops::to_layout.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/ir/dtype.h"
#include "ember/ir/layout.h"
#include "ember/ir/shape.h"

namespace ember {

enum class DeviceKind : uint8_t { cpu, cuda };

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;

  static Device cpu() { return {}; }
  // "cpu", "cuda", "cuda:1"; anything else is an ember::Error.
  static Device parse(const std::string& s);
  std::string str() const;
  bool operator==(const Device&) const = default;
};

// The type of a value in a graph.
struct TensorType {
  TensorType() = default;
  TensorType(DType dtype, Shape shape, Device device = {}, Layout layout = {})
      : dtype(dtype), shape(std::move(shape)), device(device), layout(layout) {}
  DType dtype = DType::float32;
  Shape shape;  // logical, whatever the layout
  Device device;
  Layout layout;  // plain unless a to_layout made it otherwise
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  std::string str() const;  // "float32[2, 3]", "float32[1, 64, 56, 56]{nChw16c}"
};

// Owned or borrowed memory.
class Storage {
 public:
  // Allocates nbytes, 64-byte aligned, uninitialized. `long_lived`: memory that serves many
  // runs (a model's weights, its workspace): when it is 2 MiB or more it starts on a 2 MiB
  // boundary and asks for transparent huge pages (unless EMBER_HUGE_PAGES=0). Per-run
  // memory (outputs) does not, so that its page faults never wait for the kernel to find
  // huge pages.
  static std::shared_ptr<Storage> allocate(size_t nbytes, Device device, bool long_lived = false);
  // Borrows memory owned by somebody else (a torch tensor, a numpy array); `owner` keeps
  // it alive for as long as this Storage lives.
  static std::shared_ptr<Storage> borrow(void* data, size_t nbytes, Device device,
                                         std::shared_ptr<void> owner);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  bool owned() const { return owned_; }  // allocated here, not borrowed

 private:
  Storage() = default;
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
  bool owned_ = false;
  std::shared_ptr<void> owner_;
};

struct TraceNode;  // ember/ops/trace.h: the operator call that produced a symbolic tensor

struct TensorImpl {
  TensorType type;
  std::shared_ptr<Storage> storage;  // null for a symbolic tensor
  std::shared_ptr<TraceNode> trace;  // null for a concrete tensor or a graph input
  int trace_index = 0;
  std::string op_title;              // the title of the trace's operator ("Matmul"), printed
  std::string name;                  // the symbol's name, for printing graphs
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // New tensor with uninitialized memory.
  static Tensor empty(const Shape& shape, DType dtype, Device device = Device::cpu());
  // Wraps memory without copying; `storage` must hold at least numel * itemsize bytes.
  static Tensor from_storage(std::shared_ptr<Storage> storage, const Shape& shape, DType dtype);
  // A symbolic tensor: no memory, no trace (an input of a graph to be traced).
  static Tensor symbol(const Shape& shape, DType dtype, Device device = Device::cpu(),
                       const std::string& name = "");
  // The output `index` of a traced operator, whose title (`op_title`, e.g. "Matmul") str()
  // prints.
  static Tensor traced(const TensorType& type, std::shared_ptr<TraceNode> trace, int index,
                       std::string op_title);

  bool defined() const { return impl_ != nullptr; }
  const TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  const TensorType& type() const { return impl_->type; }
  const Shape& shape() const { return impl_->type.shape; }
  DType dtype() const { return impl_->type.dtype; }
  Device device() const { return impl_->type.device; }
  int64_t rank() const { return static_cast<int64_t>(impl_->type.shape.size()); }
  int64_t numel() const;  // concrete shapes only
  int64_t nbytes() const;
  bool is_symbolic() const { return impl_->storage == nullptr; }
  const std::shared_ptr<Storage>& storage() const { return impl_->storage; }
  void* data() const;  // null for symbolic tensors
  template <class T>
  T* data_as() const { return static_cast<T*>(data()); }
  const std::shared_ptr<TraceNode>& trace() const { return impl_->trace; }
  int trace_index() const { return impl_->trace_index; }
  const std::string& name() const { return impl_->name; }

  // "Tensor(shape=(2, 3), dtype='float32', device='cpu')" followed by the values (up to a
  // summary of large tensors) for a concrete tensor, or by "from <Op>" for a traced one.
  std::string str() const;
  // Same tensor, same memory, new name (printing only).
  Tensor with_name(const std::string& name) const;

 private:
  std::shared_ptr<TensorImpl> impl_;
};

// Creation (host side: these fill memory, they do not compute operators).
Tensor zeros(const Shape& shape, DType dtype = DType::float32, Device device = Device::cpu());
Tensor ones(const Shape& shape, DType dtype = DType::float32, Device device = Device::cpu());
Tensor full(const Shape& shape, double value, DType dtype = DType::float32,
            Device device = Device::cpu());
// Standard normal values; float dtypes only. `seed` < 0 draws from a global generator.
Tensor randn(const Shape& shape, DType dtype = DType::float32, Device device = Device::cpu(),
             int64_t seed = -1);
// Copies `values` (given as double) into a new tensor of `dtype`.
Tensor from_values(const std::vector<double>& values, const Shape& shape, DType dtype);
// Element i as a double (any dtype); for printing and tests.
double element_as_double(const Tensor& t, int64_t i);

}  // namespace ember
