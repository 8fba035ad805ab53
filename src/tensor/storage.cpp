#include <cstdlib>
#include <utility>

#include "ember/support/error.h"
#include "ember/tensor/tensor.h"

namespace ember {
namespace {

constexpr size_t kAlignment = 64;

}  // namespace

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  EMBER_CHECK(device.kind == DeviceKind::cpu,
              "cannot allocate memory on " << device.str()
                                           << ": ember runs on the CPU today; use device 'cpu'");
  // aligned_alloc needs a size that is a multiple of the alignment; a zero-byte request
  // still gets a distinct, valid pointer so kernels on empty tensors see non-null memory.
  size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  EMBER_CHECK(rounded >= nbytes, "cannot allocate " << nbytes << " bytes: size overflows");
  void* p = std::aligned_alloc(kAlignment, rounded);
  EMBER_CHECK(p != nullptr, "out of memory: allocating " << nbytes << " bytes failed");
  std::shared_ptr<Storage> s(new Storage());
  s->data_ = p;
  s->nbytes_ = nbytes;
  s->device_ = device;
  s->owned_ = true;
  return s;
}

std::shared_ptr<Storage> Storage::borrow(void* data, size_t nbytes, Device device,
                                         std::shared_ptr<void> owner) {
  EMBER_ASSERT(data != nullptr || nbytes == 0, "Storage::borrow of a null pointer");
  std::shared_ptr<Storage> s(new Storage());
  s->data_ = data;
  s->nbytes_ = nbytes;
  s->device_ = device;
  s->owned_ = false;
  s->owner_ = std::move(owner);
  return s;
}

Storage::~Storage() {
  if (owned_) std::free(data_);
}

}  // namespace ember
