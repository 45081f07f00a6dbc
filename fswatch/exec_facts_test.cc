// exec_facts on real files of this host: the system's own dynamic program and its loader.
#include "fswatch/exec_facts.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace leash::fswatch {
namespace {

std::string Interpreter(const char* path) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  EXPECT_GE(fd, 0) << path;
  char buffer[256];
  size_t len = 99;
  EXPECT_EQ(ReadElfInterpreter(fd, buffer, sizeof(buffer), len), 0);
  close(fd);
  return std::string(buffer, len);
}

TEST(ReadElfInterpreter, ADynamicProgramNamesItsLoader) {
  const std::string interp = Interpreter("/bin/true");
  ASSERT_FALSE(interp.empty());
  EXPECT_EQ(interp.front(), '/');
  struct stat named;
  ASSERT_EQ(stat(interp.c_str(), &named), 0) << interp;
}

TEST(ReadElfInterpreter, TheLoaderAndNonElfFilesNameNone) {
  const std::string interp = Interpreter("/bin/true");
  ASSERT_FALSE(interp.empty());
  EXPECT_EQ(Interpreter(interp.c_str()), "");  // the loader is static
  EXPECT_EQ(Interpreter("/etc/passwd"), "");
}

struct Opened {
  explicit Opened(const char* path) : fd(open(path, O_RDONLY | O_CLOEXEC)) {
    struct stat st;
    fstat(fd, &st);
    uid = st.st_uid;
    mode = st.st_mode;
    dev = st.st_dev;
    ino = st.st_ino;
  }
  ~Opened() { close(fd); }
  bool RootControlled(const std::string& path) const {
    bool out = true;
    EXPECT_EQ(RootControlledProgram(fd, path, uid, mode, dev, ino, out), 0);
    return out;
  }
  int fd;
  uint32_t uid, mode;
  uint64_t dev, ino;
};

TEST(RootControlledProgram, TheSystemsProgramIs) {
  char real[PATH_MAX];
  ASSERT_NE(realpath("/bin/true", real), nullptr);
  Opened program(real);
  ASSERT_EQ(program.uid, 0u) << "this test needs a root-owned /bin/true";
  EXPECT_TRUE(program.RootControlled(real));
  // The same file under a path that is not its own (a link in the way, another name) is not.
  EXPECT_FALSE(program.RootControlled("/bin/true-not-there"));
}

TEST(RootControlledProgram, NotInAFolderOthersCanWriteOrWithGroupWrite) {
  const char* tmp = getenv("TEST_TMPDIR");
  ASSERT_NE(tmp, nullptr);
  const std::string folder = std::string(tmp) + "/open-folder";
  ASSERT_EQ(mkdir(folder.c_str(), 0755), 0);
  const std::string path = folder + "/true";
  {
    const int in = open("/bin/true", O_RDONLY);
    const int out = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0755);
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof(buf))) > 0) ASSERT_EQ(write(out, buf, n), n);
    close(in);
    close(out);
  }
  // Whoever runs this test owns the copy; only root's copy can pass the owner test.
  ASSERT_EQ(chmod(folder.c_str(), 0777), 0);
  {
    Opened copy(path.c_str());
    EXPECT_FALSE(copy.RootControlled(path));  // the folder: anyone may write it
  }
  ASSERT_EQ(chmod(folder.c_str(), 0755), 0);
  ASSERT_EQ(chmod(path.c_str(), 0775), 0);
  {
    Opened copy(path.c_str());
    EXPECT_FALSE(copy.RootControlled(path));  // the file: group write
  }
  ASSERT_EQ(chmod(path.c_str(), 0755), 0);
  {
    Opened copy(path.c_str());
    struct stat parent;
    ASSERT_EQ(stat(folder.c_str(), &parent), 0);
    EXPECT_EQ(copy.RootControlled(path), copy.uid == 0 && parent.st_uid == 0);
  }
}

// PT_INTERP is resolved from the caller's root, following links as the kernel does, but never
// through a /proc magic link (which would be some process's root or descriptor, its choice).
TEST(IdentityOnHost, FollowsLinksFromTheCallersRootAndNoMagicLink) {
  const std::string interp = Interpreter("/bin/true");
  ASSERT_FALSE(interp.empty());
  struct stat named;
  ASSERT_EQ(stat(interp.c_str(), &named), 0) << interp;
  uint64_t dev = 0;
  uint64_t ino = 0;
  ASSERT_EQ(IdentityOnHost(interp.c_str(), dev, ino), 0) << interp;
  EXPECT_EQ(dev, named.st_dev);
  EXPECT_EQ(ino, named.st_ino);
  EXPECT_EQ(IdentityOnHost("/proc/self/root/bin/true", dev, ino), ELOOP);
  EXPECT_EQ(IdentityOnHost("bin/true", dev, ino), EINVAL);
}

TEST(LoadingElfInterpreter, AProcessNotInExecIsNot) {
  bool out = true;
  ASSERT_EQ(LoadingElfInterpreter(getpid(), out), 0) << "needs root (/proc/<pid>/stack)";
  EXPECT_FALSE(out);
  std::thread second([] { usleep(100000); });
  out = true;
  EXPECT_EQ(LoadingElfInterpreter(getpid(), out), 0);
  EXPECT_FALSE(out);
  second.join();
}

}  // namespace
}  // namespace leash::fswatch
