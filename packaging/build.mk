# Packages (included by the top Makefile).
#
#   make deb   .debs from packaging/debian with dpkg-buildpackage -> build/deb/
#   make rpm   RPMs from packaging/rpm/dist-bind.spec with rpmbuild -> build/rpm/
#
# Both build from a copy of the tracked source tree, so what is packaged is
# what a fresh clone has.

SLURM_RELEASE := $(shell dpkg-query -W -f='$${Version}' libslurm-dev 2>/dev/null | sed -e 's/^[0-9]*://' -e 's/-[^-]*$$//')
PKG_SRC       := $(B)/pkg-src/dist-bind-$(DB_VERSION)

.PHONY: deb rpm pkg-src

# The manual pages (make install).
INSTALL_TARGETS += install-man
.PHONY: install-man
install-man:
	for s in 1 3 8; do \
	    for m in packaging/man/*.$$s; do [ -f "$$m" ] || continue; \
	        install -d $(DESTDIR)$(MANDIR)/man$$s; install -m 0644 "$$m" $(DESTDIR)$(MANDIR)/man$$s/; done; \
	done

# SLURM=24.11: build inside that release's root (tests/lab/kit/release.sh), into
# $(B)/slurm-24.11/deb and .../rpm.
ifneq ($(SLURM),)
ifneq ($(SLURM),$(shell tests/lab/kit/release.sh native))
deb rpm:
	tests/lab/kit/release.sh run $(SLURM) $(MAKE) --no-print-directory $@ B=$(B)/slurm-$(SLURM)
SLURM_ELSEWHERE := 1
endif
endif
ifeq ($(SLURM_ELSEWHERE),)
pkg-src:
	rm -rf $(B)/pkg-src && mkdir -p $(PKG_SRC)
	if git rev-parse --git-dir >/dev/null 2>&1; then \
	    git ls-files -z --cached --others --exclude-standard | xargs -0 tar -cf - | tar -xf - -C $(PKG_SRC); \
	else \
	    tar --exclude=./build -cf - . | tar -xf - -C $(PKG_SRC); \
	fi

deb: pkg-src
	rm -rf $(B)/deb && mkdir -p $(B)/deb
	mv $(PKG_SRC) $(B)/deb/ && cp -r packaging/debian $(B)/deb/dist-bind-$(DB_VERSION)/debian
	cd $(B)/deb/dist-bind-$(DB_VERSION) && dpkg-buildpackage -us -uc -b
	@ls -1 $(B)/deb/*.deb

rpm: pkg-src
	rm -rf $(B)/rpm && mkdir -p $(B)/rpm/SOURCES
	tar -czf $(B)/rpm/SOURCES/dist-bind-$(DB_VERSION).tar.gz -C $(B)/pkg-src dist-bind-$(DB_VERSION)
	rpmbuild -bb --nodeps --define "_topdir $(abspath $(B))/rpm" \
	    --define "dist_bind_version $(DB_VERSION)" --define "slurm_version $(SLURM_RELEASE)" \
	    packaging/rpm/dist-bind.spec
	@find $(B)/rpm/RPMS -name '*.rpm'
endif
