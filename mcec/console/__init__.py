"""``mcec console``: a web console over the run database (docs/language.md §13, §15).

:mod:`mcec.console.app` serves the pages (Starlette, Jinja2 templates in ``templates/``, a little
script in ``static/``), :mod:`mcec.console.forms` makes a question's form from its answer type's JSON
schema, :mod:`mcec.console.auth` says who gets in and which requests may change a run,
:mod:`mcec.console.picture` lays out a spec's pipelines and :mod:`mcec.console.views` shapes what
a page shows. The runs are read and changed through :mod:`mcec.durable` only. Imported by
``mcec console`` only: it needs the ``mcec[console]`` extra.
"""
