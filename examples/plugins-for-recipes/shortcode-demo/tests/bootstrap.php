<?php
// Loads WordPress inside the sandbox (or WP_LOAD natively), then this plugin.
define( 'WP_USE_THEMES', false );
require getenv( 'WP_LOAD' ) ? getenv( 'WP_LOAD' ) : '/wordpress/wp-load.php';
require_once dirname( __DIR__ ) . '/shortcode-demo.php';
