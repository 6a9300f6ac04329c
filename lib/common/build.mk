# lib/common: the strict text parsers and the guard every part shares
# (included by the top Makefile).  No binary of its own: the plugin, the
# runtime library, dist-bind-check and the tests link its objects.

COMMON_SRC := $(wildcard lib/common/*.cc)
FLAGS.lib/common := -Ilib/common

COMMON_PIC    := $(call objs,pic,$(COMMON_SRC))
COMMON_SAN    := $(call objs,san,$(COMMON_SRC))
COMMON_SANPIC := $(call objs,sanpic,$(COMMON_SRC))
COMMON_TSAN   := $(call objs,tsan,$(COMMON_SRC))
