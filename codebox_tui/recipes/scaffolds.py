"""Disposable workspace seeds: a minimal plugin or theme written fresh for each run."""

from __future__ import annotations

from pathlib import Path


def write_plugin_scaffold(dest: Path, slug: str, name: str | None = None) -> list[Path]:
    """``<slug>.php`` (plugin header, an ``init`` hook firing ``<slug_>_loaded``) and ``README.md``."""
    dest.mkdir(parents=True, exist_ok=False)
    title = name or slug.replace("-", " ").replace("_", " ").title()
    prefix = slug.replace("-", "_")
    main = dest / f"{slug}.php"
    main.write_text(
        "<?php\n/**\n"
        f" * Plugin Name: {title}\n"
        " * Description: Disposable workspace created by a Codebox recipe.\n"
        " * Version: 0.1.0\n */\n\n"
        "defined( 'ABSPATH' ) || exit;\n\n"
        f"add_action( 'init', function () {{\n\tdo_action( '{prefix}_loaded' );\n}} );\n",
        encoding="utf-8",
    )
    readme = dest / "README.md"
    readme.write_text(f"# {title}\n\nScaffolded by a Codebox recipe.\n", encoding="utf-8")
    return [main, readme]


def write_theme_scaffold(dest: Path, slug: str, name: str | None = None) -> list[Path]:
    """``style.css`` (theme header), ``index.php`` (the loop) and ``README.md``."""
    dest.mkdir(parents=True, exist_ok=False)
    title = name or slug.replace("-", " ").replace("_", " ").title()
    style = dest / "style.css"
    style.write_text(
        f"/*\nTheme Name: {title}\nVersion: 0.1.0\nDescription: Codebox recipe workspace.\n*/\n", encoding="utf-8"
    )
    index = dest / "index.php"
    index.write_text(
        "<?php get_header(); ?>\n<main>\n<?php while ( have_posts() ) : the_post(); ?>\n"
        "<article><h2><?php the_title(); ?></h2><?php the_content(); ?></article>\n"
        "<?php endwhile; ?>\n</main>\n<?php get_footer(); ?>\n",
        encoding="utf-8",
    )
    readme = dest / "README.md"
    readme.write_text(f"# {title}\n\nScaffolded by a Codebox recipe.\n", encoding="utf-8")
    return [style, index, readme]
