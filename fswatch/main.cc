// leash-fswatch: the filesystem and command enforcer, one fanotify group for every leashed UID.
// See app.h for flags and exit codes, watcher.h for the decision, mark_plan.h for what is marked.
#include "fswatch/app.h"

int main(int argc, char** argv) { return leash::fswatch::FswatchMain(argc, argv); }
