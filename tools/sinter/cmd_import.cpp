// sinter import MODEL.onnx -o GRAPH.json: an ONNX model as a graph file, through the Python module's
// importer. The tool runs `PYTHON -m sinter import ARGS...` (python/sinter/cli.py) and returns its
// exit code, after checking that PYTHON starts and imports the module: when either fails, one line
// names the interpreter and how to install the module.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "commands.hpp"
#include "sinter/error.hpp"

extern char** environ;

namespace sinter::cli {
namespace {

const char* kInstallHint =
    "install it with `pip install .` from the Sinter repository root (python/README.md), or pass --python PATH "
    "of a Python that has it";

// Starts args[0] (searched on PATH when it has no '/') with the arguments `args`, no shell between.
// Returns 0 or the errno of a failed start.
int spawn(const std::vector<std::string>& args, const posix_spawn_file_actions_t* actions, pid_t& pid) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  return posix_spawnp(&pid, argv[0], actions, nullptr, argv.data(), environ);
}

// The child's wait status.
int wait_for(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw Error(ErrorCode::internal, std::string("waitpid: ") + std::strerror(errno));
  }
  return status;
}

// The last line of `text` that is not blank ("" when none is).
std::string last_line(const std::string& text) {
  const size_t end = text.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return "";
  const size_t newline = text.find_last_of('\n', end);
  const size_t start = newline == std::string::npos ? 0 : newline + 1;
  return text.substr(start, end + 1 - start);
}

// Throws Error(invalid_argument) in one line when `python` does not start or cannot import the
// module's command-line entry point (sinter.__main__, which imports the extension and numpy); the
// line ends with the last line of what Python printed (its exception).
void check_python_has_sinter(const std::string& python) {
  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) throw Error(ErrorCode::io, std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  pid_t pid = 0;
  const int started = spawn({python, "-c", "import sinter.__main__"}, &actions, pid);
  posix_spawn_file_actions_destroy(&actions);
  close(err_pipe[1]);
  if (started != 0) {
    close(err_pipe[0]);
    throw Error(ErrorCode::invalid_argument, "cannot start the Python interpreter '" + python + "' (" +
                                                 std::strerror(started) + "); sinter import runs the sinter Python "
                                                 "module: " + kInstallHint);
  }
  std::string said;
  char buffer[4096];
  for (ssize_t n; (n = read(err_pipe[0], buffer, sizeof buffer)) != 0;) {
    if (n > 0) said.append(buffer, static_cast<size_t>(n));
    else if (errno != EINTR) break;
  }
  close(err_pipe[0]);
  const int status = wait_for(pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::string why = last_line(said);
    throw Error(ErrorCode::invalid_argument, "the Python interpreter '" + python + "' cannot import the sinter module" +
                                                 (why.empty() ? "" : " (" + why + ")") + "; " + kInstallHint);
  }
}

}  // namespace

int cmd_import(const Common&, const ImportOptions& o) {
  check_python_has_sinter(o.python);
  std::vector<std::string> args{o.python, "-m", "sinter", "import", o.model, "-o", o.output};
  if (!o.name.empty()) args.insert(args.end(), {"--name", o.name});
  for (const std::string& shape : o.input_shapes) args.insert(args.end(), {"--input-shape", shape});
  if (!o.weights_out.empty()) args.insert(args.end(), {"--weights-out", o.weights_out});
  std::fflush(stdout);  // what the tool printed comes before the child's output
  pid_t pid = 0;
  if (const int started = spawn(args, nullptr, pid); started != 0) {
    throw Error(ErrorCode::invalid_argument,
                "cannot start the Python interpreter '" + o.python + "' (" + std::strerror(started) + ")");
  }
  const int status = wait_for(pid);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  const int sig = WTERMSIG(status);
  std::fprintf(stderr, "sinter: import: '%s -m sinter import' ended by signal %d (%s)\n", o.python.c_str(), sig,
               strsignal(sig));
  return kInternal;
}

}  // namespace sinter::cli
