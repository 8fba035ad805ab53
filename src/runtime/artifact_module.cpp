// The kernels' machine code in a saved model: reading, stripping, linking (artifact_module.h).
#include "artifact_module.h"

#include <dlfcn.h>
#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "ember/runtime/artifact.h"
#include "ember/support/error.h"

namespace ember::artifact_module {

std::string read_module_bytes(const KernelBinary& b) {
  if (b.module_data) return std::string(b.module_data, b.module_size);
  std::ifstream in(b.module_path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EMBER_CHECK(!bytes.empty(),
              "cannot save the model: its kernels' shared object "
                  << b.module_path << " is gone from the kernel cache (was the cache cleared "
                  << "while the model was alive?); compile the model again, then save it");
  return bytes;
}

std::string strip_module(std::string so) {
  Elf64_Ehdr eh;
  if (so.size() < sizeof eh) return so;
  std::memcpy(&eh, so.data(), sizeof eh);
  const uint64_t size = so.size();
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_phentsize != sizeof(Elf64_Phdr) ||
      eh.e_phoff > size || uint64_t{eh.e_phnum} * sizeof(Elf64_Phdr) > size - eh.e_phoff)
    return so;
  uint64_t end = std::max<uint64_t>(sizeof eh, eh.e_phoff + eh.e_phnum * sizeof(Elf64_Phdr));
  for (int i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, so.data() + eh.e_phoff + i * sizeof ph, sizeof ph);
    if (ph.p_offset > size || ph.p_filesz > size - ph.p_offset) return so;
    end = std::max<uint64_t>(end, ph.p_offset + ph.p_filesz);
  }
  eh.e_shoff = 0;
  eh.e_shnum = 0;
  eh.e_shstrndx = SHN_UNDEF;
  std::memcpy(so.data(), &eh, sizeof eh);
  so.resize(end);
  return so;
}

LoadedModule::~LoadedModule() {
  if (handle) dlclose(handle);
  if (fd < 0) return;
  // A module with unique symbols (C++ inline statics) stays mapped after dlclose: then
  // its path stays taken, and the file open, for the rest of the process.
  std::string proc = "/proc/self/fd/" + std::to_string(fd);
  if (void* still = dlopen(proc.c_str(), RTLD_LAZY | RTLD_NOLOAD)) {
    dlclose(still);
    return;
  }
  ::close(fd);
}

std::shared_ptr<LoadedModule> open_module(const char* data, size_t size) {
  auto write_all = [&](int fd) {
    size_t done = 0;
    while (done < size) {
      ssize_t n = ::write(fd, data + done, size - done);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  };
  auto m = std::make_shared<LoadedModule>();
  int fd = static_cast<int>(memfd_create("ember-model-kernels", MFD_CLOEXEC));
  std::string error;
  if (fd >= 0) {
    if (write_all(fd)) {
      std::string proc = "/proc/self/fd/" + std::to_string(fd);
      m->handle = dlopen(proc.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!m->handle) error = dlerror();
    }
    if (m->handle) {
      m->fd = fd;
    } else {
      ::close(fd);
    }
  }
  if (!m->handle) {
    const char* dir = std::getenv("TMPDIR");
    std::string path = std::string(dir && *dir ? dir : "/tmp") + "/ember-model-XXXXXX.so";
    std::vector<char> buf(path.begin(), path.end());
    buf.push_back('\0');
    int tfd = mkstemps(buf.data(), 3);
    EMBER_CHECK(tfd >= 0, "cannot load the model's kernels: no memory file ("
                              << error << ") and no temporary file in " << path);
    bool ok = write_all(tfd);
    ::close(tfd);
    if (ok) m->handle = dlopen(buf.data(), RTLD_NOW | RTLD_LOCAL);
    if (!m->handle) error = ok ? dlerror() : "write failed";
    std::remove(buf.data());
  }
  if (!m->handle) throw ArtifactError("cannot load the model's kernels: " + error);
  return m;
}

}  // namespace ember::artifact_module
