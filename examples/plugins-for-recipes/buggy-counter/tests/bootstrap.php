<?php
define( 'WP_USE_THEMES', false );
require getenv( 'WP_LOAD' ) ? getenv( 'WP_LOAD' ) : '/wordpress/wp-load.php';
require_once dirname( __DIR__ ) . '/buggy-counter.php';
