<?php
/**
 * PHPUnit bootstrap file
 *
 * Kept as an older `wp scaffold plugin-tests` left it: it finds the test library through WP_TESTS_DIR
 * and says nothing about the PHPUnit Polyfills.
 *
 * @package Reading_Time
 */

$_tests_dir = getenv( 'WP_TESTS_DIR' );
if ( ! $_tests_dir ) {
	$_tests_dir = '/tmp/wordpress-tests-lib';
}

// Give access to tests_add_filter() function.
require_once $_tests_dir . '/includes/functions.php';

/**
 * Manually load the plugin being tested.
 */
function _manually_load_plugin() {
	require dirname( dirname( __FILE__ ) ) . '/reading-time.php';
}
tests_add_filter( 'muplugins_loaded', '_manually_load_plugin' );

// Start up the WP testing environment.
require $_tests_dir . '/includes/bootstrap.php';
