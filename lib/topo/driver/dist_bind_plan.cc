// build/dist-bind-plan: the dry run on its own, for builds without
// dist-bind-check.  `dist-bind-plan ARGS` is `dist-bind-check --plan ARGS`.
#include <vector>

extern "C" int db_check_plan_main(int argc, char **argv);

int main(int argc, char **argv) {
    static char plan[] = "--plan";
    std::vector<char *> args{plan};
    for (int i = 1; i < argc; i++) args.push_back(argv[i]);
    args.push_back(nullptr);
    return db_check_plan_main(static_cast<int>(args.size() - 1), args.data());
}
